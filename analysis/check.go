package main

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// A hold is one acquisition as its client saw it: from the acquisition's
// completion to the invocation of its release, the library's report that
// it was lost (Done closed), or the death of the process, whichever came
// first. Two holds that overlap were both believed by their clients at
// the same moment: a lock violation.
type hold struct {
	client, inst int
	mode         string // "w", "r" or "p", as in event.Mode
	invoke       int64  // the acquisition's invocation
	start, end   int64
	tok          tokens
	lost         bool // ended by the library reporting it lost
	cut          bool // ended by the death of the process
	// goneAtRelease: its release found it gone ("lock not held") although
	// the library had not reported it lost: it was released or taken
	// from under its holder.
	goneAtRelease bool
}

// instKey names one process instance of a client.
type instKey struct{ client, inst int }

// holdsOf derives the holds of one process instance from its events, in
// order; exit is when the process was seen to exit.
func holdsOf(evs []event, exit int64) []hold {
	var holds []hold
	var cur *hold
	var invoked int64
	closeAt := func(t int64) {
		cur.end = t
		holds = append(holds, *cur)
		cur = nil
	}
	for _, e := range evs {
		switch {
		case e.Op == opAcquire && e.Type == typeInvoke:
			invoked = e.T
		case e.Op == opAcquire && e.Type == typeOK:
			t, _ := parseTokens(e.Tok)
			cur = &hold{client: e.Client, inst: e.Inst, mode: e.Mode, invoke: invoked, start: e.T, tok: t}
		case cur != nil && e.Op == opLost:
			cur.lost = true
			closeAt(e.T)
		case cur != nil && e.Op == opRelease && e.Type == typeInvoke:
			closeAt(e.T)
		case cur == nil && len(holds) > 0 && e.Op == opRelease && e.Type == typeFail:
			last := &holds[len(holds)-1]
			last.goneAtRelease = !last.lost && strings.Contains(e.Err, "not held")
		}
	}
	if cur != nil {
		cur.cut = true
		closeAt(max(exit, cur.start))
	}
	return holds
}

// violations is what the holds say about the lock.
type violations struct {
	// holds counts the holds that began while a hold they conflict with
	// was still believed held: a second writer, a writer among readers,
	// a permit beyond the last.
	holds int
	// longest is the longest time one hold overlapped holds it conflicts
	// with: from the first such overlap to the last, within the hold (a
	// paused holder's, from its successor's acquisition to its resuming).
	longest time.Duration
	// overlaps is every hold that overlapped holds it conflicts with:
	// a mixed segment names the fault under way when each overlap began.
	overlaps []overlapAt
}

// overlapAt is one hold that overlapped holds it conflicts with: when its
// first such overlap began, for how long it overlapped them, and whether
// it is one of the holds counted (it began while such a hold was believed
// held; a paused holder overlaps without being counted, its successors
// are counted, and its overlap begins when the first of them began).
type overlapAt struct {
	at      int64
	span    time.Duration
	counted bool
}

// lockViolations checks the holds against the primitive: an exclusive
// ("w") hold conflicts with every other hold, a shared ("r") hold with
// exclusive ones, and permits ("p") conflict when more than permits of
// them overlap.
func lockViolations(holds []hold, permits int) violations {
	var ls, ps []hold
	for _, h := range holds {
		if h.mode == "p" {
			ps = append(ps, h)
		} else {
			ls = append(ls, h)
		}
	}
	v := exclusive(ls)
	p := overPermits(ps, permits)
	return violations{holds: v.holds + p.holds, longest: max(v.longest, p.longest), overlaps: append(v.overlaps, p.overlaps...)}
}

func exclusive(holds []hold) violations {
	var v violations
	for i, a := range holds {
		began, lo, hi := false, int64(math.MaxInt64), int64(math.MinInt64)
		for j, b := range holds {
			if i == j || b.end <= a.start || b.start >= a.end || (a.mode == "r" && b.mode == "r") {
				continue
			}
			began = began || b.start <= a.start
			lo, hi = min(lo, max(a.start, b.start)), max(hi, min(a.end, b.end))
		}
		span := overlapSpan(lo, hi)
		if began {
			v.holds++
		}
		if began || span > 0 {
			v.overlaps = append(v.overlaps, overlapAt{lo, span, began})
		}
		v.longest = max(v.longest, span)
	}
	return v
}

// overlapSpan is hi-lo, or 0 when nothing overlapped (lo above hi).
func overlapSpan(lo, hi int64) time.Duration {
	if hi > lo {
		return time.Duration(hi - lo)
	}
	return 0
}

// overPermits finds the stretches with more than permits holds; a hold
// that began with permits held already is a violation, and each hold
// overlaps the stretches it meets.
func overPermits(holds []hold, permits int) violations {
	type edge struct {
		t     int64
		delta int
	}
	var edges []edge
	for _, h := range holds {
		edges = append(edges, edge{h.start, 1}, edge{h.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta)) // ends first
	})
	var v violations
	var over [][2]int64 // stretches with more than permits holds
	inside := 0
	for _, e := range edges {
		inside += e.delta
		switch {
		case e.delta > 0 && inside > permits:
			v.holds++
			if inside == permits+1 {
				over = append(over, [2]int64{e.t, math.MaxInt64})
			}
		case e.delta < 0 && inside == permits:
			over[len(over)-1][1] = e.t
		}
	}
	for _, h := range holds {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		counted := false // it began inside a stretch: it is one of v.holds
		for _, o := range over {
			if o[1] > h.start && o[0] < h.end {
				lo, hi = min(lo, max(h.start, o[0])), max(hi, min(h.end, o[1]))
			}
			counted = counted || (o[0] <= h.start && h.start < o[1])
		}
		span := overlapSpan(lo, hi)
		switch {
		case counted: // its overlap began as it entered
			v.overlaps = append(v.overlaps, overlapAt{h.start, span, true})
		case span > 0: // it was inside when a stretch began
			v.overlaps = append(v.overlaps, overlapAt{lo, span, false})
		}
		v.longest = max(v.longest, span)
	}
	return v
}

// tokenOrder checks the tokens' promise: a hold that asked for the lock
// after another hold had its tokens carries larger ones, on every server
// both hold, whatever happened in between (restarts without data
// included). It returns the pairs that break it. A process that gets the
// same tokens again for a later hold breaks it too: every hold has a hold
// id and a token of its own, and a hold the handle gave up is never
// adopted.
func tokenOrder(holds []hold) int {
	broken := 0
	for _, a := range holds {
		for _, b := range holds {
			if outOfOrder(a, b) {
				broken++
			}
		}
	}
	return broken
}

// outOfOrder reports whether hold b asked for the lock after hold a had
// its tokens and did not get larger ones.
func outOfOrder(a, b hold) bool {
	return len(a.tok) > 0 && len(b.tok) > 0 && a.start < b.invoke && !b.tok.above(a.tok)
}

// tokenOrderAfterJump counts the pairs of holds that break the tokens'
// order (as tokenOrder counts them) whose later hold asked for the lock
// while the servers' clocks caught up with tokens taken during a clock
// jump: from the jump until catchUp (the jump's size) after the clocks
// were set back. Tokens keep their order across a clock set back only
// while the fencing counter lives, one lease after the last token; a
// restart, or a lease with no acquisition (a killed or paused holder),
// ends it sooner, and a clock set back by more than the time since the
// last token is outside the documented condition (failure-model.md).
func tokenOrderAfterJump(holds []hold, injected []faultEvent, catchUp time.Duration) int {
	n := 0
	for _, a := range holds {
		for _, b := range holds {
			if !outOfOrder(a, b) {
				continue
			}
			for _, ev := range injected {
				if ev.kind == "clock" && b.invoke >= ev.at.UnixNano() && b.invoke < ev.end.Add(catchUp).UnixNano() {
					n++
					break
				}
			}
		}
	}
	return n
}

// A tokenBreak is one class of the pairs of holds of a segment that broke
// the tokens' order (as tokenOrder counts them), for the page: those
// whose later hold asked while the clocks caught up after one clock jump
// of a mixed segment (jump, the index of that fault in injected; after,
// the faults injected before they had caught up), or, with jump -1, those
// nothing explains, which fail the verdict.
type tokenBreak struct {
	jump            int
	after           []faultEvent
	pairs           int
	earlier, later  int // distinct holds on each side of the pairs
	earlierHolds    map[int]bool
	laterHolds      map[int]bool
	catchUp         time.Duration
	firstAt, lastAt int64 // invocations of the later holds
}

// tokenBreaks sorts the pairs that break the tokens' order into classes:
// in a mixed segment by the clock jump whose catch-up the later hold asked
// in (as tokenOrderAfterJump counts them), and the rest. A segment of one
// fault kind has no excused class: there the counter outlives a jump.
func tokenBreaks(holds []hold, injected []faultEvent, catchUp time.Duration, mixed bool) []tokenBreak {
	classes := map[int]*tokenBreak{}
	var order []int
	for i, a := range holds {
		for j, b := range holds {
			if !outOfOrder(a, b) {
				continue
			}
			k := -1
			if mixed {
				for e, ev := range injected {
					if ev.kind == "clock" && b.invoke >= ev.at.UnixNano() && b.invoke < ev.end.Add(catchUp).UnixNano() {
						k = e
						break
					}
				}
			}
			c := classes[k]
			if c == nil {
				c = &tokenBreak{jump: k, catchUp: catchUp, earlierHolds: map[int]bool{}, laterHolds: map[int]bool{},
					firstAt: b.invoke, lastAt: b.invoke}
				if k >= 0 {
					ev := injected[k]
					for _, f := range injected[k+1:] {
						if f.at.Before(ev.end.Add(catchUp)) {
							c.after = append(c.after, f)
						}
					}
				}
				classes[k] = c
				order = append(order, k)
			}
			c.pairs++
			c.earlierHolds[i], c.laterHolds[j] = true, true
			c.firstAt, c.lastAt = min(c.firstAt, b.invoke), max(c.lastAt, b.invoke)
		}
	}
	slices.Sort(order)
	var out []tokenBreak
	for _, k := range order {
		c := classes[k]
		c.earlier, c.later = len(c.earlierHolds), len(c.laterHolds)
		c.earlierHolds, c.laterHolds = nil, nil
		out = append(out, *c)
	}
	// The unexplained class (-1) last.
	if len(out) > 0 && out[0].jump < 0 {
		out = append(out[1:], out[0])
	}
	return out
}

// longestWait is the longest time during which some client waited for an
// acquisition and none completed: the lock's unavailability as the
// clients saw it. evs holds every instance's events in time order, exits
// when each instance was seen to exit.
func longestWait(evs []event, exits map[instKey]int64) time.Duration {
	type mark struct {
		t    int64
		k    instKey
		kind string // "invoke", "ok", "end"
	}
	var marks []mark
	for _, e := range evs {
		if e.Op != opAcquire {
			continue
		}
		kind := "end"
		if e.Type == typeInvoke || e.Type == typeOK {
			kind = e.Type
		}
		marks = append(marks, mark{e.T, instKey{e.Client, e.Inst}, kind})
	}
	for k, t := range exits {
		marks = append(marks, mark{t, k, "end"})
	}
	slices.SortStableFunc(marks, func(a, b mark) int { return cmp.Compare(a.t, b.t) })
	pending := map[instKey]bool{}
	var since int64
	longest := time.Duration(0)
	for _, m := range marks {
		switch {
		case m.kind == "invoke":
			if len(pending) == 0 {
				since = m.t
			}
			pending[m.k] = true
		case pending[m.k]:
			longest = max(longest, time.Duration(m.t-since))
			delete(pending, m.k)
			if m.kind == "ok" {
				since = m.t
			}
		}
	}
	return longest
}

// goneUnder counts the pairs of conflicting holds in which the second
// began while the first was believed held, and among them those whose
// first hold's release then found it gone without the library having
// reported it lost: overlaps in which the first holder was never told.
func goneUnder(holds []hold) (pairs, gone int) {
	for _, a := range holds {
		for _, b := range holds {
			if a.client == b.client || b.start <= a.start || b.start >= a.end || !conflict(a, b) {
				continue
			}
			pairs++
			if a.goneAtRelease {
				gone++
			}
		}
	}
	return pairs, gone
}

// conflict reports whether two holds exclude each other (permits, which
// only conflict in numbers, are left out).
func conflict(a, b hold) bool {
	return a.mode != "p" && b.mode != "p" && (a.mode == "w" || b.mode == "w")
}
