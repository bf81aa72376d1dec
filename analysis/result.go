package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// segResult is what the check of one segment found.
type segResult struct {
	prim, fault string
	lease       time.Duration // the segment's lease (watchdog timeout)
	extraLease  bool          // a segment of a further lease of -leases
	want        int           // faults asked (-injections)
	dur         time.Duration
	injected    []faultEvent

	acquired, failed int           // acquisitions completed, and failed or unknown
	lost             int           // holds the library reported lost (Done closed)
	lock             violations    // overlapping holds
	tokenOrder       int           // pairs of fenced holds whose tokens broke the order
	tokenOrderJump   int           // mixed: of them, those taken while the clocks caught up after a jump (tokenOrderAfterJump)
	tokenBreaks      []tokenBreak  // the pairs that broke the order, by class (for the page)
	start            time.Time     // when the clients started
	longestWait      time.Duration // longest time someone waited and nobody acquired
	data             dataStats
	linear           string                // porcupine's verdict on the register, "-" when not checked
	keysLeft         []string              // keys left in Redis that never expire
	lateDelivered    int                   // late: chunks of commands the proxies delivered past the clients' timeout
	lateRefused      int                   // late: scripts Redis refused as late (LATE errors)
	lateScripts      string                // late: what was delivered late, by script
	latePairs        int                   // late: pairs of holds that overlapped
	lateExplained    int                   // late: of them, those that began just after a late copy of the first holder's release
	pairs, goneUnder int                   // pairs of overlapping holds; of them, those whose first hold was gone at its release, unreported
	notReplicated    int                   // acquisitions refused for want of the replica's acknowledgement (ErrNotReplicated)
	byFault          map[string]violations // mixed: the overlaps by the fault under way when each began (see attribute)
}

// check reads the segment's histories and the resource's log.
func (s *segment) check(keysLeft []string) (segResult, error) {
	res := segResult{prim: s.prim, fault: s.fault, lease: s.lease, extraLease: s.extraLease, want: s.want, dur: s.dur,
		injected: s.injected, keysLeft: keysLeft, linear: "-", start: s.start}
	var histories [][]event
	var all []event
	var holds []hold
	exits := map[instKey]int64{}
	for _, c := range s.insts {
		evs, err := readLines[event](c.hist)
		if err != nil {
			return res, err
		}
		histories = append(histories, evs)
		all = append(all, evs...)
		exits[instKey{c.id, c.inst}] = c.p.exitAt
		holds = append(holds, holdsOf(evs, c.p.exitAt)...)
	}
	slices.SortStableFunc(all, func(a, b event) int { return cmp.Compare(a.T, b.T) })
	for _, e := range all {
		switch {
		case e.Op == opAcquire && e.Type == typeOK:
			res.acquired++
		case e.Op == opAcquire && e.Type != typeInvoke:
			res.failed++
		}
	}
	for _, h := range holds {
		if h.lost {
			res.lost++
		}
	}
	for _, e := range all {
		if e.Op == opAcquire && e.Type == typeFail && strings.Contains(e.Err, notReplicatedText) {
			res.notReplicated++
		}
	}
	res.pairs, res.goneUnder = goneUnder(holds)
	if s.lateLog != nil {
		res.latePairs, res.lateExplained = s.lateLog.releasedLate(holds, lateRelease)
	}
	permits := 1
	if s.prim == "leased" {
		permits = s.r.cfg.permits
	}
	res.lock = lockViolations(holds, permits)
	if s.fault == "mixed" {
		res.byFault = attribute(res.lock.overlaps, s.injected, recovery(s.lease))
	}
	res.tokenOrder = tokenOrder(holds)
	if s.fault == "mixed" {
		// Alone, a clock jump leaves the counter alive (clients keep
		// acquiring) and the tokens must keep their order: only a
		// fault after it can end the counter while the clocks catch up.
		res.tokenOrderJump = tokenOrderAfterJump(holds, s.injected, grantLease+s.lease)
	}
	if res.tokenOrder > 0 {
		res.tokenBreaks = tokenBreaks(holds, s.injected, grantLease+s.lease, s.fault == "mixed")
	}
	res.longestWait = longestWait(all, exits)
	log, err := readLines[resEntry](filepath.Join(s.dir, "resource.jsonl"))
	if err != nil {
		return res, err
	}
	res.data = replay(log, permits)
	if s.prim != "leased" {
		res.linear = linearizable(rmwOps(histories), 10*time.Second)
	}
	return res, nil
}

// notReplicatedText is how the library's ErrNotReplicated reads.
const notReplicatedText = "not acknowledged by enough replicas"

// lateRelease is how soon after a late copy of a release reached Redis an
// acquisition by another client counts as explained by it: the release
// frees the lock or grants it to a waiter at once, and the waiter's
// acquisition completes within a round trip or two.
const lateRelease = 100 * time.Millisecond

// label names the segment: "rlock under pause", "rlock under pause
// (lease 30s)" for a segment of a further lease.
func (r segResult) label() string {
	return r.primLabel() + " under " + r.fault
}

// primLabel is the primitive, with the lease of a segment of a further
// lease: "rlock (lease 30s)".
func (r segResult) primLabel() string {
	if r.extraLease {
		return fmt.Sprintf("%s (lease %v)", r.prim, r.lease)
	}
	return r.prim
}

// line is the segment's one-line summary for the terminal.
func (r segResult) line() string {
	late := ""
	if r.fault == "late" {
		late = fmt.Sprintf(", %d delivered late (%s), %d refused as LATE, %d of %d overlaps just after a late release",
			r.lateDelivered, r.lateScripts, r.lateRefused, r.lateExplained, r.latePairs)
	}
	if r.fault == "mixed" {
		late += ", faults " + drawn([]segResult{r})
		for _, k := range sortedKinds(r.byFault) {
			late += fmt.Sprintf(", %d overlaps under %s", r.byFault[k].holds, k)
		}
	}
	if r.notReplicated > 0 {
		late += fmt.Sprintf(", %d not replicated", r.notReplicated)
	}
	return fmt.Sprintf("%-15s %-17s %2d faults, %4d holds, %d lost, %d holds in conflict (longest overlap %v), %d stale refused, %d data violations, linearizable %s, longest wait %v",
		r.primLabel(), r.fault, len(r.injected), r.acquired, r.lost, r.lock.holds, ms(r.lock.longest),
		r.data.readsRefused+r.data.writesRefused, r.data.dataViolations(), r.linear, ms(r.longestWait)) + late
}

// ms rounds d for the page.
func ms(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// resultTable is the terminal's summary of every segment.
func resultTable(results []segResult) string {
	var b strings.Builder
	b.WriteString("\n")
	for _, r := range results {
		b.WriteString(r.line() + "\n")
	}
	return b.String()
}
