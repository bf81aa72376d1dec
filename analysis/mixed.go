package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The mixed fault. A mixed segment injects, one after another, faults
// drawn at random from every kind that applies to its primitive, each
// with its usual length and quiet time after it, so that a fault meets
// the state the one before it left behind (a lock handed over during a
// server pause, then its holder cut off). Two kinds are left out, because
// they need a setup of their own that would change what every other kind
// does: the failover (the clients reach the first server through the
// Sentinel, which would also fail over a paused server) and the restart
// with persistence (a server that writes an AOF; a mixed segment's servers
// keep no data, so its restarts lose the locks). The draws are seeded
// (-seed, printed and on the page); which kinds still fit at the end of a
// segment depends on timing, so a seed repeats the order, not always the
// last draw.

// mixedFaults is how many faults of the usual length (a pause or a cut,
// and its quiet time) a mixed segment holds at the least.
const mixedFaults = 3

// mixedPool is the fault kinds a mixed segment on prim draws from.
func mixedPool(prim string) []string {
	var pool []string
	for _, k := range faultKinds {
		if k != "mixed" && k != "failover" && k != "restart-persist" && applies(prim, k) {
			pool = append(pool, k)
		}
	}
	return pool
}

// kinds is what the segment injects: its fault kind, or for mixed every
// kind it may draw. The setup serves each (a clock shim, a replica, the
// late proxies).
func (s *segment) kinds() []string {
	if s.fault == "mixed" {
		return mixedPool(s.prim)
	}
	return []string{s.fault}
}

// uses reports whether the segment may inject a fault of kind.
func (s *segment) uses(kind string) bool { return slices.Contains(s.kinds(), kind) }

// next is the next fault to inject: the segment's kind, or for mixed one
// drawn among the kinds that still fit before the segment ends; "" when
// none fits. A mixed segment that has fewer faults than it was asked for
// (want) draws only among the kinds that leave time for the rest, each as
// short as the shortest kind, so that a long draw (late delivery) never
// costs it the faults it was planned for.
func (s *segment) next() string {
	lease := s.lease
	rest := time.Duration(0)
	if need := s.want - len(s.injected); s.fault == "mixed" && need > 1 {
		shortest := time.Duration(-1)
		for _, k := range s.kinds() {
			if c := faultCost(k, lease); shortest < 0 || c < shortest {
				shortest = c
			}
		}
		rest = time.Duration(need-1) * shortest
	}
	fits := func(rest time.Duration) []string {
		var fit []string
		for _, k := range s.kinds() {
			if !time.Now().Add(faultLength(k, lease) + recovery(lease) + rest).After(s.until) {
				fit = append(fit, k)
			}
		}
		return fit
	}
	fit := fits(rest)
	if len(fit) == 0 && rest > 0 {
		fit = fits(0) // too late for all of them: whatever fits
	}
	switch {
	case len(fit) == 0:
		return ""
	case s.fault != "mixed":
		return fit[0]
	}
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(s.r.cfg.seed, uint64(s.n)))
	}
	return fit[s.rng.IntN(len(fit))]
}

// noFault names the overlaps of a mixed segment that began while no fault
// was injected nor in its quiet time: before the first, or after the
// last one's quiet time.
const noFault = "none"

// attribute sorts a mixed segment's overlaps by the fault under way when
// each began: injected, or in the quiet time after it, while its effects
// play out (a restarted server's holder learns of its loss, a paused
// client resumes). The windows do not overlap, since the nemesis injects
// the next fault only after the quiet time. Each kind gets the holds
// counted as violations and the longest overlap that began under it (an
// uncounted hold's overlap begins when a counted one began).
func attribute(overlaps []overlapAt, injected []faultEvent, quiet time.Duration) map[string]violations {
	by := map[string]violations{}
	for _, o := range overlaps {
		kind := noFault
		for _, ev := range injected {
			if o.at >= ev.at.UnixNano() && o.at < ev.end.Add(quiet).UnixNano() {
				kind = ev.kind
			}
		}
		v := by[kind]
		if o.counted {
			v.holds++
		}
		v.longest = max(v.longest, o.span)
		by[kind] = v
	}
	return by
}

// overlapsByFault is a segment's overlaps by the fault kind they began
// under: all under its own kind, or for mixed as attribute sorted them.
func overlapsByFault(r segResult) map[string]violations {
	if r.fault == "mixed" {
		return r.byFault
	}
	if r.lock.holds == 0 {
		return nil
	}
	return map[string]violations{r.fault: r.lock}
}

// explained reports whether an overlap that began under kind is one a
// lease lock may show: kind may overlap (noFault never does).
func explained(kind string) bool { return kind != noFault && mayOverlap(kind) }

// sortedKinds is the keys of by in the order of faultKinds, noFault last.
func sortedKinds(by map[string]violations) []string {
	var out []string
	for _, k := range append(slices.Clone(faultKinds), noFault) {
		if _, ok := by[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// drawn counts the faults mixed segments injected, by kind: "pause 2,
// late 1".
func drawn(rs []segResult) string {
	n := map[string]int{}
	for _, r := range rs {
		for _, ev := range r.injected {
			n[ev.kind]++
		}
	}
	var parts []string
	for _, k := range faultKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// mixedExtra is what the mixed segments showed: the faults drawn, the
// overlaps by the fault they began under, and the word "defect" for
// those no fault that may overlap explains.
func mixedExtra(rs []segResult, seed uint64) string {
	total := 0
	for _, r := range rs {
		total += len(r.injected)
	}
	s := fmt.Sprintf(" The mixed segments (seed %d) drew %s: %s.", seed, plural(total, "fault"), drawn(rs))
	by := map[string]violations{}
	for _, r := range rs {
		for k, v := range r.byFault {
			t := by[k]
			t.holds += v.holds
			t.longest = max(t.longest, v.longest)
			by[k] = t
		}
	}
	if len(by) == 0 {
		return s + " No overlap began under any of them."
	}
	var parts []string
	bad := 0
	for _, k := range sortedKinds(by) {
		where := "under " + k
		if k == noFault {
			where = "while no fault was under way"
		}
		parts = append(parts, fmt.Sprintf("%s %s (longest overlap %s)", plural(by[k].holds, "hold"), where, ms(by[k].longest)))
		if !explained(k) {
			bad += by[k].holds
		}
	}
	s += " Overlapping holds began " + strings.Join(parts, ", ") + " (a fault's quiet time after it counts as its own)."
	if bad > 0 {
		s += fmt.Sprintf(" **%s began where no fault that may overlap explains them: a defect.**", plural(bad, "hold"))
	}
	return s
}
