package main

import (
	"strings"
	"testing"
	"time"
)

// TestEveryFaultExplained: a fault kind added to the nemesis is on the
// page in full, what it does, why, in words, and in or out of the list of
// faults a lease may not survive.
func TestEveryFaultExplained(t *testing.T) {
	for _, f := range faultKinds {
		if faultDoc[f] == "" || faultWhy[f] == "" {
			t.Errorf("fault %s: no faultDoc or faultWhy", f)
		}
		if p := faultPhrases([]string{f}); p == "" {
			t.Errorf("fault %s: no words for the conclusion", f)
		}
	}
	for _, f := range []string{"kill", "partition", "late", "restart-persist", "server-pause", "quorum-minority", "quorum-majority", "replica-partition"} {
		if mayOverlap(f) {
			t.Errorf("mayOverlap(%s) = true: the library claims no overlap under it", f)
		}
	}
	for _, f := range []string{"pause", "clock", "restart", "failover"} {
		if !mayOverlap(f) {
			t.Errorf("mayOverlap(%s) = false: a lease cannot survive it", f)
		}
	}
}

// TestOverlapUnderSafeFaultIsDefect: an overlap under late delivery is
// called a defect, one under a pause is explained.
func TestOverlapUnderSafeFaultIsDefect(t *testing.T) {
	cfg := config{clients: 4, lease: time.Second, prims: []string{"rlock"}, faults: []string{"pause", "late"}}
	r := &run{cfg: cfg, started: time.Now()}
	results := []segResult{
		{prim: "rlock", fault: "pause", acquired: 10, lock: violations{holds: 2, longest: time.Second}, linear: "yes"},
		{prim: "rlock", fault: "late", acquired: 10, lock: violations{holds: 1, longest: 17 * time.Millisecond},
			lateDelivered: 3, lateScripts: "rlock_unlock x2", linear: "yes"},
	}
	page := r.page(results)
	for _, want := range []string{
		"under process pauses, two clients believed",
		"**Under late delivery, which a lease lock should survive, holds overlapped too (for up to 17ms)",
		"these overlaps are a defect",
		"Delivered late, by script: rlock: rlock_unlock x2.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	results[1].lock = violations{}
	if page := r.page(results); !strings.Contains(page, "Under every other fault (late delivery), no two holds overlapped") {
		t.Error("a clean late-delivery run is not called clean")
	}
}

// TestGoneUnder: a hold whose release finds it gone, never reported
// lost, is told apart from one the library reported lost.
func TestGoneUnder(t *testing.T) {
	a := []event{
		ev(1, 1, opAcquire, typeInvoke, 0, ""),
		ev(1, 1, opAcquire, typeOK, 1, "0:1"),
		ev(1, 1, opRelease, typeInvoke, 50, ""),
		{Client: 1, Inst: 1, Op: opRelease, Type: typeFail, T: 51 * ms1, Err: `rlock: unlock "x": lock not held`},
	}
	b := []event{
		ev(2, 1, opAcquire, typeInvoke, 5, ""),
		ev(2, 1, opAcquire, typeOK, 10, "0:2"),
		ev(2, 1, opRelease, typeInvoke, 60, ""),
	}
	holds := append(holdsOf(a, 100*ms1), holdsOf(b, 100*ms1)...)
	if pairs, gone := goneUnder(holds); pairs != 1 || gone != 1 {
		t.Fatalf("goneUnder = %d pairs, %d gone; want 1, 1", pairs, gone)
	}
	a = append(a[:2], ev(1, 1, opLost, typeOK, 40, ""), a[2], a[3])
	holds = append(holdsOf(a, 100*ms1), holdsOf(b, 100*ms1)...)
	if pairs, gone := goneUnder(holds); pairs != 1 || gone != 0 {
		t.Fatalf("goneUnder after a reported loss = %d pairs, %d gone; want 1, 0", pairs, gone)
	}
}

func TestWithoutFlag(t *testing.T) {
	got := strings.Join(withoutFlag([]string{"-time", "2m", "-netslot", "1", "--netslot=2", "-page", "p"}, "netslot"), " ")
	if got != "-time 2m -page p" {
		t.Fatalf("withoutFlag = %q", got)
	}
}
