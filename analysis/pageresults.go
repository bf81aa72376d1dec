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
			s.primLabel(), s.fault, len(s.injected), s.acquired, s.failed, s.lost, s.lock.holds,
			ms(s.lock.longest), s.data.readsRefused+s.data.writesRefused, s.data.dataViolations(), s.linear,
			ms(s.longestWait), order, keysText(s.keysLeft))
	}
	w("\n")
	tokenSection(w, results)
}

// tokenSection explains, segment by segment, every pair of holds that
// broke the tokens' order, class by class; or says there was none.
func tokenSection(w func(string, ...any), results []segResult) {
	var broken []segResult
	for _, r := range results {
		if r.tokenOrder > 0 {
			broken = append(broken, r)
		}
	}
	w("**Token order, segment by segment.** ")
	if len(broken) == 0 {
		w("No pair of holds broke the tokens' order in any segment: 0 in every row above.\n\n")
		return
	}
	w("The segments whose *token order broken* is not 0, each class of their pairs explained (a pair is\n")
	w("an earlier hold and a later one that asked after it had its tokens and did not get larger ones; one\n")
	w("hold taken while a clock ran ahead pairs with every later hold that asked before the clock caught\n")
	w("up, so the pairs grow as the product of the two):\n\n")
	for _, r := range broken {
		w("- **%s**: %s.", r.label(), plural(r.tokenOrder, "pair"))
		for _, c := range r.tokenBreaks {
			w(" %s", c.text(r))
		}
		w("\n")
	}
	w("\n")
}

// text explains one class of a segment's token-order breaks.
func (c tokenBreak) text(r segResult) string {
	at := func(t time.Time) string { return "+" + t.Sub(r.start).Round(100*time.Millisecond).String() }
	span := fmt.Sprintf("%s between %s and %s", plural(c.pairs, "pair"), plural(c.earlier, "earlier hold"),
		plural(c.later, "later one"))
	if c.jump < 0 {
		return fmt.Sprintf("%s that no clock jump explains: **a defect** (the verdict fails it).", span)
	}
	ev := r.injected[c.jump]
	var after []string
	for _, f := range c.after {
		after = append(after, fmt.Sprintf("%s at %s", f.kind, at(f.at)))
	}
	ended := "no token was taken for a lease meanwhile (the holder was stopped or cut off, or the lock was " +
		"handed over through a grant), and the fencing counter expired"
	if len(after) > 0 {
		ended = "then " + strings.Join(after, ", ") + " came before the clocks had caught up: a restart " +
			"loses the fencing counter, a pause, a cut or a crash of the holder lets it expire (it lives a lease " +
			"after the last token)"
	}
	return fmt.Sprintf("%s: the later hold asked within %v after the clock jump at %s (%s), which ran the "+
		"servers' clocks %v ahead, so tokens taken meanwhile came from the clock ahead; %s, and tokens taken "+
		"afterwards came from the true clock, below them. This is outside the documented condition (a clock set "+
		"back by no more than the time since the last token, failure-model.md) and is reported, not judged; the "+
		"resource refused the stale holds' operations (%d refused in this segment, %d stale writes accepted).",
		span, c.catchUp, at(ev.at), ev.target, c.catchUp, ended,
		r.data.readsRefused+r.data.writesRefused, r.data.dataViolations())
}

func keysText(keys []string) string {
	if len(keys) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (`%s`)", len(keys), strings.Join(keys, "`, `"))
}
