package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVerdict judges made-up results by the two rules: a fenced
// primitive's resource accepts no stale write, and a fault that must
// cause no overlap causes none; overlaps and unfenced data violations
// under the faults that may overlap pass.
func TestVerdict(t *testing.T) {
	fault := []faultEvent{{kind: "x", target: "c1.1"}}
	overlap := violations{holds: 3, longest: time.Second}
	tests := []struct {
		name string
		r    segResult
		want []string // substrings of the one failure expected; none: pass
	}{
		{"pause overlaps, fencing refuses", segResult{prim: "rlock", fault: "pause", lock: overlap,
			data: dataStats{writesRefused: 2}}, nil},
		{"unfenced lost updates under pause", segResult{prim: "rlock-unfenced", fault: "pause", lock: overlap,
			data: dataStats{lostUpdates: 2}}, nil},
		{"leased above its permits under a restart without data", segResult{prim: "leased", fault: "restart",
			lock: overlap, data: dataStats{overCapacity: 4}}, nil},
		{"clean kill", segResult{prim: "rwlock", fault: "kill"}, nil},
		{"stale write accepted with fencing", segResult{prim: "quorum", fault: "clock", lock: overlap,
			data: dataStats{staleAccepted: 1}},
			[]string{"quorum under clock", "accepted 1 stale write (1 with a stale token"}},
		{"overlap under a partition", segResult{prim: "rlock-unfenced", fault: "partition",
			lock: violations{holds: 1, longest: 281 * time.Millisecond}},
			[]string{"rlock-unfenced under partition", "1 hold began", "longest overlap 281ms", "partition must cause no overlap"}},
		{"overlap under a restart with an AOF", segResult{prim: "fairlock", fault: "restart-persist", lock: overlap},
			[]string{"fairlock under restart-persist", "3 holds began"}},
		{"tokens out of order under a restart without data", segResult{prim: "fairlock", fault: "restart", lock: overlap,
			tokenOrder: 2}, []string{"fairlock under restart", "2 pairs of holds broke the tokens' order"}},
		{"leased above its permits under a kill", segResult{prim: "leased", fault: "kill", data: dataStats{overCapacity: 2}},
			[]string{"leased under kill", "2 entries above the permits"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.injected, tt.r.acquired = fault, 10
			got := verdict([]segResult{tt.r})
			if len(tt.want) == 0 {
				if len(got) > 0 {
					t.Fatalf("want a pass, got %q", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one failure, got %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("failure %q lacks %q", got[0], w)
				}
			}
		})
	}
}

// TestVerdictTestedNothing fails a segment that injected no fault, or
// whose fault could not be injected, or in which nobody held: a green
// smoke run must have tested something.
func TestVerdictTestedNothing(t *testing.T) {
	for _, r := range []segResult{
		{prim: "rlock", fault: "pause", acquired: 10},
		{prim: "rlock", fault: "pause", injected: []faultEvent{{target: "c1.1"}}},
		{prim: "rlock", fault: "partition", acquired: 10, injected: []faultEvent{{target: "error: ip link: no such device"}}},
	} {
		if got := verdict([]segResult{r}); len(got) != 1 {
			t.Errorf("%+v: want one failure, got %q", r, got)
		}
	}
}

// TestSmokePairs checks that the smoke run gives every primitive one
// fault kind, each kind once, and that each pair can fail: a primitive
// without tokens is judged only under a fault that must cause no
// overlap.
func TestSmokePairs(t *testing.T) {
	var prims, faults []string
	for _, p := range smokePairs {
		prims, faults = append(prims, p[0]), append(faults, p[1])
		if !slices.Contains(faultKinds, p[1]) {
			t.Errorf("unknown fault %q", p[1])
		}
		if !fenced(p[0]) && mayOverlap(p[1]) {
			t.Errorf("%s under %s: nothing would be judged", p[0], p[1])
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(prims)), slices.Sorted(slices.Values(primitives))) {
		t.Errorf("smoke primitives %v, want each of %v once", prims, primitives)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(faults)))) != len(faults) {
		t.Errorf("a fault kind twice in %v", faults)
	}
}

// TestSmokeFlags: -smoke runs its pairs in 40s unless -time says
// otherwise, and refuses -primitives and -faults.
func TestSmokeFlags(t *testing.T) {
	c, err := parseConfig([]string{"-smoke"})
	if err != nil || c.total != smokeTime || len(c.pairs) != len(smokePairs) || len(c.prims) != len(smokePairs) {
		t.Fatalf("-smoke: %+v, %v", c, err)
	}
	r := &run{cfg: c}
	if !slices.Equal(r.segments(), smokePairs) {
		t.Errorf("segments %v, want %v", r.segments(), smokePairs)
	}
	if c, err := parseConfig([]string{"-smoke", "-time", "90s"}); err != nil || c.total != 90*time.Second {
		t.Errorf("-smoke -time 90s: %v, %v", c.total, err)
	}
	if _, err := parseConfig([]string{"-smoke", "-faults", "pause"}); err == nil {
		t.Error("-smoke -faults accepted")
	}
	c, _ = parseConfig([]string{"-primitives", "rlock,leased", "-faults", "kill,pause"})
	if got := (&run{cfg: c}).segments(); len(got) != 4 || got[1] != [2]string{"rlock", "pause"} {
		t.Errorf("every primitive under every fault: %v", got)
	}
}

// TestPageVerdict: the page states the run's verdict, and the record of
// how the smoke run was shown to fail.
func TestPageVerdict(t *testing.T) {
	cfg := config{clients: 4, lease: time.Second, work: 20 * time.Millisecond, permits: 2,
		prims: []string{"rlock"}, faults: []string{"kill"}}
	r := &run{cfg: cfg, started: time.Now()}
	res := []segResult{{prim: "rlock", fault: "kill", acquired: 10, injected: []faultEvent{{target: "c1.1"}},
		lock: violations{holds: 2, longest: time.Second}}}
	page := r.page(res)
	for _, want := range []string{"## Verdict", "**This run failed:**", "- rlock under kill: 2 holds began",
		"## How we check the check", "verdict: FAIL (2)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	res[0].lock = violations{}
	if page := r.page(res); !strings.Contains(page, "This run passed.") {
		t.Error("a passing run is not said to pass")
	}
}

// TestVerdictMixed judges a mixed segment's overlaps by the fault under
// way when each began: under a pause they pass, under a partition or
// while no fault was under way they fail; an unfenced lock's lost updates
// pass only beside overlaps that a fault that may overlap explains.
func TestVerdictMixed(t *testing.T) {
	fault := []faultEvent{{kind: "pause", target: "c1.1"}, {kind: "partition", target: "c2.1"}}
	tests := []struct {
		name string
		r    segResult
		want []string // substrings of the one failure expected; none: pass
	}{
		{"overlaps under a pause", segResult{prim: "rlock", byFault: map[string]violations{"pause": {holds: 3}}}, nil},
		{"overlaps under a partition", segResult{prim: "rlock",
			byFault: map[string]violations{"pause": {holds: 3}, "partition": {holds: 1, longest: 40 * time.Millisecond}}},
			[]string{"rlock under mixed: 1 hold began", "longest overlap 40ms", "under its partition fault", "partition must cause no overlap"}},
		{"overlaps with no fault under way", segResult{prim: "fairlock", byFault: map[string]violations{noFault: {holds: 2}}},
			[]string{"fairlock under mixed: 2 holds began", "while no fault was under way"}},
		{"unfenced lost updates after a pause", segResult{prim: "rlock-unfenced",
			byFault: map[string]violations{"pause": {holds: 1}}, data: dataStats{lostUpdates: 1}}, nil},
		{"unfenced lost updates with no overlap", segResult{prim: "rlock-unfenced", data: dataStats{lostUpdates: 1}},
			[]string{"rlock-unfenced under mixed: the resource saw 1 lost update"}},
		{"tokens out of order while the clocks caught up", segResult{prim: "quorum", tokenOrder: 5, tokenOrderJump: 5}, nil},
		{"tokens out of order otherwise", segResult{prim: "quorum", tokenOrder: 5, tokenOrderJump: 3},
			[]string{"quorum under mixed: 2 pairs of holds broke the tokens' order"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.fault, tt.r.injected, tt.r.acquired = "mixed", fault, 10
			got := verdict([]segResult{tt.r})
			if len(tt.want) == 0 {
				if len(got) > 0 {
					t.Fatalf("want a pass, got %q", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one failure, got %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("failure %q lacks %q", got[0], w)
				}
			}
		})
	}
}

// TestPlanInjections: -injections plans each segment for that many
// faults, mixed for that many draws, and a further lease of -leases adds
// one segment per primitive and kind of -lease-faults, which -time does
// not stretch.
func TestPlanInjections(t *testing.T) {
	c, err := parseConfig([]string{"-primitives", "rlock,quorum", "-faults", "pause,quorum-majority,mixed",
		"-injections", "5", "-leases", "1s,30s", "-lease-faults", "pause,kill"})
	if err != nil {
		t.Fatal(err)
	}
	if c.lease != time.Second || !slices.Equal(c.extraLeases, []time.Duration{30 * time.Second}) {
		t.Fatalf("leases %v %v", c.lease, c.extraLeases)
	}
	r := &run{cfg: c}
	plan := r.plan()
	if len(plan) != 5+4 {
		t.Fatalf("plan has %d segments, want 9: %+v", len(plan), plan)
	}
	for _, p := range plan {
		if p.extra {
			if p.lease != 30*time.Second || p.want != 1 || p.dur != minSegment(p.fault, p.lease, 1) {
				t.Errorf("%s: %+v", p.label(), p)
			}
			continue
		}
		if p.want != 5 || p.dur < warmup+5*faultCost(p.fault, time.Second) && p.fault != "mixed" {
			t.Errorf("%s: %+v, want room for 5 faults", p.label(), p)
		}
	}
	if r.scale() != 1 {
		t.Errorf("scale %v: -time 2m is shorter than the plan", r.scale())
	}
	if got := recovery(30 * time.Second); got != 17*time.Second {
		t.Errorf("recovery(30s) = %v", got)
	}
	if got := recovery(time.Second); got != time.Second {
		t.Errorf("recovery(1s) = %v, want 1s as before", got)
	}
	for _, bad := range [][]string{{"-lease", "2s", "-leases", "1s,30s"}, {"-leases", "1s,x"},
		{"-lease-faults", "pause,nope"}, {"-injections", "0"}} {
		if _, err := parseConfig(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestVerdictFewerThanAsked: a segment that got fewer faults than
// -injections asked fails the run.
func TestVerdictFewerThanAsked(t *testing.T) {
	r := segResult{prim: "rlock", fault: "pause", want: 3, acquired: 10, linear: "yes",
		injected: []faultEvent{{kind: "pause"}, {kind: "pause"}}}
	fails := verdict([]segResult{r})
	if len(fails) != 1 || !strings.Contains(fails[0], "2 faults injected, 3 asked") {
		t.Errorf("verdict = %q", fails)
	}
	r.injected = append(r.injected, faultEvent{kind: "pause"})
	if fails := verdict([]segResult{r}); len(fails) != 0 {
		t.Errorf("verdict = %q", fails)
	}
	r.extraLease, r.lease = true, 30*time.Second
	r.injected = nil
	if fails := verdict([]segResult{r}); len(fails) != 1 || !strings.Contains(fails[0], "rlock (lease 30s) under pause") {
		t.Errorf("verdict = %q", fails)
	}
}
