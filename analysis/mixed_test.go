package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMixedPool: a mixed segment draws from every kind that applies to
// its primitive, but the failover, the restart with persistence and
// itself.
func TestMixedPool(t *testing.T) {
	for _, prim := range primitives {
		pool := mixedPool(prim)
		for _, k := range []string{"mixed", "failover", "restart-persist"} {
			if slices.Contains(pool, k) {
				t.Errorf("%s: %s in the mixed pool %v", prim, k, pool)
			}
		}
		for _, k := range []string{"pause", "server-pause", "clock", "late", "kill"} {
			if !slices.Contains(pool, k) {
				t.Errorf("%s: %s not in the mixed pool %v", prim, k, pool)
			}
		}
		if got := slices.Contains(pool, "quorum-majority"); got != (prim == "quorum") {
			t.Errorf("%s: quorum-majority in the pool: %v", prim, got)
		}
	}
}

// TestAttribute: an overlap counts under the fault injected when it
// began, or in the quiet time after it; none under noFault.
func TestAttribute(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	injected := []faultEvent{
		{kind: "pause", at: t0, end: t0.Add(4 * time.Second)},
		{kind: "partition", at: t0.Add(5 * time.Second), end: t0.Add(9 * time.Second)},
	}
	overlaps := []overlapAt{
		{at(-time.Second), time.Millisecond, true},                      // before the first fault
		{at(time.Second), 3 * time.Second, false},                       // the paused holder's, from its successor's start
		{at(time.Second), time.Millisecond, true},                       // its successor's
		{at(4500 * time.Millisecond), time.Second, true},                // in the pause's quiet time
		{at(6 * time.Second), 20 * time.Millisecond, true},              // in the partition
		{at(10*time.Second + time.Millisecond), time.Millisecond, true}, // after the partition's quiet time
	}
	by := attribute(overlaps, injected, time.Second)
	want := map[string]violations{
		"pause":     {holds: 2, longest: 3 * time.Second},
		"partition": {holds: 1, longest: 20 * time.Millisecond},
		noFault:     {holds: 2, longest: time.Millisecond},
	}
	for k, w := range want {
		if by[k].holds != w.holds || by[k].longest != w.longest {
			t.Errorf("%s: %+v, want %+v", k, by[k], w)
		}
	}
	if len(by) != len(want) {
		t.Errorf("attribute = %v", by)
	}
	if got := strings.Join(sortedKinds(by), ","); got != "pause,partition,none" {
		t.Errorf("sortedKinds = %s", got)
	}
}

// TestTokenOrderAfterJump: a break by a hold that asked while the clocks
// caught up after a jump is told apart from one at any other time.
func TestTokenOrderAfterJump(t *testing.T) {
	t0 := time.Unix(0, 0)
	jump := []faultEvent{{kind: "clock", at: t0.Add(100 * time.Millisecond), end: t0.Add(200 * time.Millisecond)}}
	holds := []hold{
		h(1, "w", 150, 160, "0:900"), // taken during the jump
		h(2, "w", 170, 180, "0:800"), // before the clocks caught up: excused
		h(3, "w", 500, 510, "0:700"), // long after: a break all the same
	}
	broken := tokenOrder(holds)
	if broken != 3 {
		t.Fatalf("tokenOrder = %d broken, want 3", broken)
	}
	if got := tokenOrderAfterJump(holds, jump, 200*time.Millisecond); got != 1 {
		t.Errorf("tokenOrderAfterJump = %d, want 1", got)
	}
	if got := tokenOrderAfterJump(holds, nil, time.Second); got != 0 {
		t.Errorf("with no jump, tokenOrderAfterJump = %d, want 0", got)
	}
}

// TestPageMixed: the page's fault table has a row for mixed with its
// seed, and the findings say what the mixed segments drew and under which
// fault their overlaps began, a defect where none that may overlap
// explains them.
func TestPageMixed(t *testing.T) {
	cfg := config{clients: 4, lease: time.Second, work: 20 * time.Millisecond, permits: 2, seed: 7,
		prims: []string{"rlock"}, faults: []string{"server-pause", "mixed"}}
	r := &run{cfg: cfg, started: time.Now()}
	results := []segResult{
		{prim: "rlock", fault: "server-pause", acquired: 10, linear: "yes",
			injected: []faultEvent{{kind: "server-pause", target: "1 redis-server(s)"}}},
		{prim: "rlock", fault: "mixed", acquired: 10, linear: "yes",
			lock:     violations{holds: 3, longest: 2 * time.Second},
			byFault:  map[string]violations{"pause": {holds: 3, longest: 2 * time.Second}},
			injected: []faultEvent{{kind: "pause"}, {kind: "late"}, {kind: "pause"}}},
	}
	page := r.page(results)
	for _, want := range []string{
		"| server-pause | redis-server (the first; two of the quorum's three",
		"| as the fault drawn (seed 7) | 3 |",
		"The mixed segments (seed 7) drew 3 faults: pause 2, late 1.",
		"Overlapping holds began 3 holds under pause (longest overlap 2s)",
		"under process pauses, two clients believed",
		"Under every other fault (redis-server pauses and late delivery), no two holds overlapped",
		"This run passed.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	results[1].byFault["late"] = violations{holds: 1, longest: 30 * time.Millisecond}
	page = r.page(results)
	for _, want := range []string{
		"**1 hold began where no fault that may overlap explains them: a defect.**",
		"**Under late delivery, which a lease lock should survive, holds overlapped too (for up to 30ms)",
		"rlock under mixed: 1 hold began",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("with an overlap under late delivery, page lacks %q", want)
		}
	}
}

// TestTokenBreaks: the page's classes of token-order breaks add up to
// tokenOrder, the excused one to tokenOrderAfterJump, and name the fault
// that came before the clocks caught up.
func TestTokenBreaks(t *testing.T) {
	t0 := time.Unix(0, 0)
	injected := []faultEvent{
		{kind: "clock", target: "1 redis-server(s), +4s and back", at: t0.Add(100 * time.Millisecond), end: t0.Add(200 * time.Millisecond)},
		{kind: "restart", at: t0.Add(250 * time.Millisecond), end: t0.Add(260 * time.Millisecond)},
	}
	holds := []hold{
		h(1, "w", 150, 160, "0:900"),
		h(2, "w", 170, 180, "0:800"),
		h(3, "w", 500, 510, "0:700"),
	}
	cs := tokenBreaks(holds, injected, 200*time.Millisecond, true)
	if len(cs) != 2 || cs[0].jump != 0 || cs[0].pairs != 1 || cs[1].jump != -1 || cs[1].pairs != 2 {
		t.Fatalf("tokenBreaks = %+v", cs)
	}
	if len(cs[0].after) != 1 || cs[0].after[0].kind != "restart" {
		t.Errorf("after = %+v", cs[0].after)
	}
	r := segResult{prim: "fairlock", fault: "mixed", start: t0, injected: injected, tokenOrder: 3, tokenBreaks: cs}
	var b strings.Builder
	tokenSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, []segResult{r})
	for _, want := range []string{"**fairlock under mixed**: 3 pairs.", "1 pair between 1 earlier hold and 1 later one",
		"restart at +300ms", "2 pairs between 2 earlier holds and 1 later one that no clock jump explains: **a defect**"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("token section lacks %q:\n%s", want, b.String())
		}
	}
	if cs := tokenBreaks(holds, injected, 200*time.Millisecond, false); len(cs) != 1 || cs[0].jump != -1 || cs[0].pairs != 3 {
		t.Errorf("outside mixed, tokenBreaks = %+v", cs)
	}
}
