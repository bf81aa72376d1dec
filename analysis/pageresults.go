package main

import (
	"fmt"
	"strings"
	"time"
)

// total adds up the results of one primitive (or one fault kind).
type total struct {
	runs, acquired, failed, lost         int
	conflicts                            int
	longest, longestWait                 time.Duration
	refused, dataViolations, lostUpdates int
	tokenOrder, keysLeft                 int
	tokenOrderJump                       int
	linear                               map[string]int
}

func (t *total) add(r segResult) {
	t.runs++
	t.acquired += r.acquired
	t.failed += r.failed
	t.lost += r.lost
	t.conflicts += r.lock.holds
	t.longest = max(t.longest, r.lock.longest)
	t.longestWait = max(t.longestWait, r.longestWait)
	t.refused += r.data.readsRefused + r.data.writesRefused
	t.dataViolations += r.data.dataViolations()
	t.lostUpdates += r.data.lostUpdates
	t.tokenOrder += r.tokenOrder
	t.tokenOrderJump += r.tokenOrderJump
	t.keysLeft += len(r.keysLeft)
	if t.linear == nil {
		t.linear = map[string]int{}
	}
	t.linear[r.linear]++
}

// linearText says what porcupine said over several runs.
func (t *total) linearText() string {
	if t.linear["-"] == t.runs {
		return "-"
	}
	var parts []string
	for _, v := range []string{"yes", "NO", "unknown"} {
		if n := t.linear[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", v, n, t.runs-t.linear["-"]))
		}
	}
	return strings.Join(parts, ", ")
}

func totals(results []segResult, key func(segResult) string) map[string]*total {
	m := map[string]*total{}
	for _, r := range results {
		k := key(r)
		if m[k] == nil {
			m[k] = &total{}
		}
		m[k].add(r)
	}
	return m
}

func fencingOf(prim string) string {
	switch {
	case prim == "leased":
		return "none (permits have no token)"
	case fenced(prim):
		return "yes"
	}
	return "no"
}

func (r *run) resultSection(w func(string, ...any), results []segResult) {
	w("## Results\n\n")
	w("Per primitive, over every fault kind. *Lock violations* are holds that began while a hold they\n")
	w("conflict with was still believed held by its client (a second writer; a permit beyond the %d),\n", r.cfg.permits)
	w("and *longest* is the longest time one hold overlapped such holds. *Data violations* are stale\n")
	w("writes the resource accepted: lost updates of the register, operations accepted with a stale\n")
	w("token, entries above the semaphore's permits.\n\n")
	w("| primitive | fencing | holds | lost (Done) | lock violations | longest overlap | stale ops refused | data violations | register linearizable |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	byPrim := totals(results, func(s segResult) string { return s.prim })
	for _, p := range r.cfg.prims {
		t := byPrim[p]
		if t == nil {
			continue
		}
		w("| %s | %s | %d | %d | %d | %s | %d | **%d** | %s |\n", p, fencingOf(p), t.acquired, t.lost,
			t.conflicts, ms(t.longest), t.refused, t.dataViolations, t.linearText())
	}
	w("\nEach primitive under each fault kind:\n\n")
	w("| primitive | fault | injected | holds (failed) | lost | lock violations | longest overlap | refused | data violations | linearizable | longest wait | token order broken | keys without TTL |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range results {
		order := fmt.Sprint(s.tokenOrder)
		if s.tokenOrderJump > 0 {
			order += fmt.Sprintf(" (%d as the clocks caught up)", s.tokenOrderJump)
		}
		w("| %s | %s | %d | %d (%d) | %d | %d | %s | %d | %d | %s | %s | %s | %s |\n",
			s.prim, s.fault, len(s.injected), s.acquired, s.failed, s.lost, s.lock.holds,
			ms(s.lock.longest), s.data.readsRefused+s.data.writesRefused, s.data.dataViolations(), s.linear,
			ms(s.longestWait), order, keysText(s.keysLeft))
	}
	w("\n")
}

func keysText(keys []string) string {
	if len(keys) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (`%s`)", len(keys), strings.Join(keys, "`, `"))
}
