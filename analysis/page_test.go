package main

import (
	"strings"
	"testing"
	"time"
)

// TestPageTellsTheOutcome renders the page from made-up results: the
// conclusion follows the numbers, whichever way they go.
func TestPageTellsTheOutcome(t *testing.T) {
	cfg := config{clients: 4, lease: time.Second, work: 20 * time.Millisecond, permits: 2,
		prims: []string{"rlock-unfenced", "rlock", "leased"}, faults: []string{"pause", "kill"},
		args: []string{"-time", "2m"}}
	r := &run{cfg: cfg, started: time.Now()}
	results := []segResult{
		{prim: "rlock-unfenced", fault: "pause", acquired: 10, lock: violations{holds: 3, longest: time.Second},
			data: dataStats{lostUpdates: 2}, linear: "NO"},
		{prim: "rlock-unfenced", fault: "kill", acquired: 10, linear: "yes"},
		{prim: "rlock", fault: "pause", acquired: 10, lock: violations{holds: 3, longest: 2 * time.Second},
			data: dataStats{writesRefused: 1}, linear: "yes"},
		{prim: "rlock", fault: "kill", acquired: 10, linear: "yes"},
		{prim: "leased", fault: "pause", acquired: 10, keysLeft: []string{"redisync:{a}:permits"}, linear: "-"},
		{prim: "leased", fault: "kill", acquired: 10, keysLeft: []string{"redisync:{b}:permits", "stray"}, linear: "-"},
	}
	page := r.page(results)
	for _, want := range []string{
		"go run . -time 2m",
		"under process pauses, two clients believed they held the same lock at once, for up to 2s",
		"Without fencing, 2 updates of the protected register were lost",
		"the data stayed safe: 0 stale writes accepted over 2 fenced runs",
		"| rlock | pause | 0 | 10 (0) | 0 | 3 | 2s | 1 | 0 | yes |",
		"Keys without a TTL were left behind, a leak: leased under kill: 1 (`stray`)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	results[0].data.lostUpdates = 0
	if page := r.page(results); !strings.Contains(page, "no update happened to be lost in this run") {
		t.Error("a run without lost updates despite overlapping holds is not explained")
	}
	results[2].data.lostUpdates = 1
	if page := r.page(results); !strings.Contains(page, "the resource still accepted 1 stale write: the claim failed") {
		t.Error("a stale write accepted under fencing is not called a failed claim")
	}
}
