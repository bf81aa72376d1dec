package main

import (
	"strings"
	"testing"
	"time"
)

const ms1 = int64(time.Millisecond)

// ev builds an event at t milliseconds.
func ev(c, inst int, op, typ string, t int64, tok string) event {
	return event{Client: c, Inst: inst, Op: op, Type: typ, T: t * ms1, Tok: tok, Mode: "w"}
}

func TestHoldsOf(t *testing.T) {
	evs := []event{
		ev(1, 1, opAcquire, typeInvoke, 0, ""),
		ev(1, 1, opAcquire, typeOK, 5, "0:1"),
		ev(1, 1, opRelease, typeInvoke, 20, ""),
		ev(1, 1, opRelease, typeOK, 21, ""),
		ev(1, 1, opAcquire, typeInvoke, 30, ""),
		ev(1, 1, opAcquire, typeOK, 31, "0:2"),
		ev(1, 1, opLost, typeOK, 40, ""),
		ev(1, 1, opRelease, typeInvoke, 50, ""),
		ev(1, 1, opAcquire, typeInvoke, 60, ""),
		ev(1, 1, opAcquire, typeFail, 70, ""),
		ev(1, 1, opAcquire, typeInvoke, 80, ""),
		ev(1, 1, opAcquire, typeOK, 81, "0:3"),
	}
	got := holdsOf(evs, 100*ms1)
	want := []hold{
		{client: 1, inst: 1, mode: "w", invoke: 0, start: 5 * ms1, end: 20 * ms1, tok: tokens{0: 1}},
		{client: 1, inst: 1, mode: "w", invoke: 30 * ms1, start: 31 * ms1, end: 40 * ms1, tok: tokens{0: 2}, lost: true},
		{client: 1, inst: 1, mode: "w", invoke: 80 * ms1, start: 81 * ms1, end: 100 * ms1, tok: tokens{0: 3}, cut: true},
	}
	if len(got) != len(want) {
		t.Fatalf("holds = %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.start != w.start || g.end != w.end || g.invoke != w.invoke || g.lost != w.lost || g.cut != w.cut || g.tok.String() != w.tok.String() {
			t.Errorf("hold %d = %+v, want %+v", i, g, w)
		}
	}
}

func h(c int, mode string, start, end int64, tok string) hold {
	t, _ := parseTokens(tok)
	return hold{client: c, inst: 1, mode: mode, invoke: start*ms1 - ms1, start: start * ms1, end: end * ms1, tok: t}
}

func TestLockViolations(t *testing.T) {
	cases := []struct {
		name    string
		holds   []hold
		permits int
		want    violations
	}{
		{"one after another", []hold{h(1, "w", 0, 10, ""), h(2, "w", 10, 20, "")}, 1, violations{}},
		{"a paused holder", []hold{h(1, "w", 0, 1000, ""), h(2, "w", 500, 520, ""), h(3, "w", 521, 600, "")}, 1,
			violations{holds: 2, longest: 100 * time.Millisecond}},
		{"readers share", []hold{h(1, "r", 0, 10, ""), h(2, "r", 5, 20, "")}, 1, violations{}},
		{"a writer among readers", []hold{h(1, "r", 0, 10, ""), h(2, "w", 5, 20, "")}, 1,
			violations{holds: 1, longest: 5 * time.Millisecond}},
		{"permits", []hold{h(1, "p", 0, 10, ""), h(2, "p", 0, 10, ""), h(3, "p", 10, 20, "")}, 2, violations{}},
		{"a paused permit holder", []hold{h(1, "p", 0, 100, ""), h(2, "p", 0, 10, ""), h(3, "p", 20, 30, ""),
			h(4, "p", 25, 40, ""), h(2, "p", 50, 60, "")}, 2,
			violations{holds: 1, longest: 5 * time.Millisecond}},
	}
	for _, c := range cases {
		got := lockViolations(c.holds, c.permits)
		counted, starts := 0, map[int64]bool{}
		for _, o := range got.overlaps {
			if o.counted {
				counted++
				starts[o.at] = true
			}
		}
		if got.holds != c.want.holds || got.longest != c.want.longest || counted != got.holds {
			t.Errorf("%s: %+v, want %+v (and one overlap counted per hold counted)", c.name, got, c.want)
		}
		// A mixed segment names the fault under way when an overlap
		// began: an earlier holder's overlap begins when a counted hold
		// began, never when the earlier holder did.
		for _, o := range got.overlaps {
			if !o.counted && !starts[o.at] {
				t.Errorf("%s: an overlap at %d that began with no counted hold", c.name, o.at)
			}
		}
	}
}

func TestTokenOrder(t *testing.T) {
	holds := []hold{
		h(1, "w", 0, 10, "0:100"),
		h(2, "w", 20, 30, "0:90"), // after a restart, a token below: broken
		h(3, "w", 40, 50, "0:200"),
		h(3, "w", 60, 70, "0:200"), // the same process, the same token again: broken
		h(4, "w", 0, 8, "0:50"),    // asked before the first had its token: no order
	}
	if broken := tokenOrder(holds); broken != 2 {
		t.Fatalf("tokenOrder = %d broken, want 2", broken)
	}
}

func TestLongestWait(t *testing.T) {
	evs := []event{
		ev(1, 1, opAcquire, typeInvoke, 0, ""),
		ev(1, 1, opAcquire, typeOK, 1, ""),
		ev(2, 1, opAcquire, typeInvoke, 2, ""),
		ev(2, 1, opAcquire, typeOK, 50, ""), // waited 49ms behind 1
		ev(1, 1, opAcquire, typeInvoke, 60, ""),
		ev(1, 1, opAcquire, typeFail, 70, ""),
		ev(3, 1, opAcquire, typeInvoke, 100, ""), // then dies at 180
	}
	exits := map[instKey]int64{{3, 1}: 180 * ms1}
	if got := longestWait(evs, exits); got != 80*time.Millisecond {
		t.Fatalf("longestWait = %v, want 80ms", got)
	}
}

// rmwHistory is one client's hold: read r, then write r+1 with the given
// outcome ("" for no write).
func rmwHistory(c int, t0, r int64, outcome string) []event {
	evs := []event{
		{Client: c, Inst: 1, Op: opRead, Type: typeInvoke, T: t0 * ms1},
		{Client: c, Inst: 1, Op: opRead, Type: typeOK, T: (t0 + 1) * ms1, Val: r},
	}
	if outcome != "" {
		evs = append(evs,
			event{Client: c, Inst: 1, Op: opWrite, Type: typeInvoke, T: (t0 + 10) * ms1, Val: r + 1},
			event{Client: c, Inst: 1, Op: opWrite, Type: outcome, T: (t0 + 11) * ms1, Val: r + 1})
	}
	return evs
}

func TestLinearizable(t *testing.T) {
	cases := []struct {
		name      string
		histories [][]event
		want      string
	}{
		{"in turn", [][]event{rmwHistory(1, 0, 0, typeOK), rmwHistory(2, 20, 1, typeOK)}, "yes"},
		{"lost update", [][]event{rmwHistory(1, 0, 0, typeOK), rmwHistory(2, 2, 0, typeOK)}, "NO"},
		{"stale write refused", [][]event{rmwHistory(1, 0, 0, typeFail), rmwHistory(2, 2, 0, typeOK)}, "yes"},
		{"unknown outcome", [][]event{rmwHistory(1, 0, 0, typeInfo), rmwHistory(2, 20, 1, typeOK)}, "yes"},
		{"a read of nothing written", [][]event{rmwHistory(1, 0, 0, typeOK), rmwHistory(2, 20, 5, "")}, "NO"},
	}
	for _, c := range cases {
		if got := linearizable(rmwOps(c.histories), 5*time.Second); got != c.want {
			t.Errorf("%s: linearizable %s, want %s", c.name, got, c.want)
		}
	}
}

func TestRefusesWithoutRoot(t *testing.T) {
	err := checkHost(1000, nil)
	if err == nil || !strings.Contains(err.Error(), "must run as root") {
		t.Fatalf("checkHost(1000, nil) = %v, want a refusal naming root", err)
	}
}

func TestParseConfig(t *testing.T) {
	if _, err := parseConfig([]string{"-primitives", "rlock,nope"}); err == nil {
		t.Error("an unknown primitive was accepted")
	}
	if _, err := parseConfig([]string{"-faults", "pause,flood"}); err == nil {
		t.Error("an unknown fault was accepted")
	}
	c, err := parseConfig([]string{"-time", "1m", "-primitives", "rlock", "-faults", "kill"})
	if err != nil || c.total != time.Minute || len(c.prims) != 1 || len(c.faults) != 1 {
		t.Fatalf("parseConfig = %+v, %v", c, err)
	}
}
