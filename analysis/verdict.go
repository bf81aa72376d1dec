package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// The verdict turns a run's results into pass or fail, by two rules:
//
//   - A fenced primitive's resource accepts no stale write, whatever the
//     fault: that is the claim fencing makes, and nothing in a lease can
//     excuse a break of it. Nor does a later hold get a token that is not
//     above an earlier one's: the resource would refuse it rather than
//     accept a stale write, so only the tokens' order shows that break.
//     The one exception is the documented condition of the tokens: in a
//     mixed segment, a break by a hold that asked while the servers'
//     clocks caught up after a jump, which set them back by more than
//     the time since the last token, and a later fault (a restart, a
//     lease with no acquisition) ended the counter that carried the
//     order meanwhile (tokenOrderAfterJump), is reported, not judged.
//   - A fault kind that should let nobody in early (mayOverlap false, in
//     findings.go: the one list the page, its findings and the verdict share)
//     causes no overlapping holds, and no data violation on any primitive,
//     fenced or not: a crash, a partition the holder notices before its
//     lease runs out, a restart that keeps the data.
//
//   - A mixed segment judges each overlap by the fault under way when it
//     began (injected, or in the quiet time after it; see attribute in
//     mixed.go), as the second rule would in a segment of that fault
//     alone; an overlap that began while no fault was under way fails.
//
// Everything else is reported, not judged: overlaps under pauses, clock
// jumps and restarts without data are what a lease lock does, and an
// unfenced lock's lost updates (or a leased semaphore's entries above its
// permits) under those faults follow from the overlaps.
//
// Both rules are about events, not about timing: a stale write that the
// resource accepted is in its log, and an overlap is two holds that both
// clients believed held. Under the faults that may not overlap, a holder
// stops believing before the server lets anyone else in: its release ends
// the hold within a critical section, and the library's timer (counted
// from when the last renewal was sent) would end it before the server's
// lease in any case. It takes a process stalled for about a lease to blur
// that, and such a stall is a pause, a real overlap, not noise.

// smokePairs is the CI smoke run (-smoke): each primitive under one fault
// kind, each fault kind once, chosen so that every pair can fail:
//
//   - the two primitives without tokens (rlock-unfenced, leased) get
//     faults that must cause no overlap, since under the others nothing
//     about them is judged. rlock-unfenced gets the partition: a holder
//     cut off while it releases has its release resent, and a copy that
//     reaches Redis after the cut heals is the stale release that a
//     release script without an owner check would obey;
//   - rlock gets the pause: a paused holder that resumes past its lease
//     is the stale writer fencing exists for, so the data rule is tested
//     where it matters;
//   - fairlock and quorum get the other faults that may overlap (a restart
//     without data, clock jumps): judged on their data only;
//   - rwlock gets late delivery (its writers' and readers' scripts held
//     back past the request window, then run: a late copy of a release
//     that named only its owner released the same handle's next hold),
//     the leased semaphore the restart with an AOF, and rlock-ack
//     (WithReplicaAck, on a primary with a replica) the cut between
//     primary and replica: judged on overlaps. (The crash is left to the
//     full run and to internal/faulttest.)
var smokePairs = [][2]string{
	{"rlock-unfenced", "partition"},
	{"rlock", "pause"},
	{"fairlock", "restart"},
	{"rwlock", "late"},
	{"leased", "restart-persist"},
	{"quorum", "clock"},
	{"rlock-ack", "replica-partition"},
}

// verdict lists what the results break, one line per segment and rule,
// each naming the primitive, the fault and what was violated; none means
// the run passes.
func verdict(results []segResult) []string {
	var fails []string
	for _, r := range results {
		at := r.label()
		if len(r.injected) == 0 || r.acquired == 0 {
			fails = append(fails, fmt.Sprintf("%s: tested nothing (%d faults injected, %d holds): "+
				"the segment is too short or the clients could not start", at, len(r.injected), r.acquired))
		} else if len(r.injected) < r.want {
			fails = append(fails, fmt.Sprintf("%s: %s injected, %d asked (-injections): the faults took longer "+
				"than planned (injectSlack in nemesis.go)", at, plural(len(r.injected), "fault"), r.want))
		}
		for _, ev := range r.injected {
			if strings.HasPrefix(ev.target, "error: ") {
				fails = append(fails, fmt.Sprintf("%s: the fault could not be injected: %s", at, ev.target))
				break
			}
		}
		d := r.data
		if fenced(r.prim) && d.dataViolations() > 0 {
			fails = append(fails, fmt.Sprintf("%s: the fenced resource accepted %s (%d with a stale token, "+
				"%s, %d above the permits); fencing must refuse every one", at, plural(d.dataViolations(), "stale write"),
				d.staleAccepted, plural(d.lostUpdates, "lost update"), d.overCapacity))
		}
		if n := r.tokenOrder - r.tokenOrderJump; n > 0 {
			fails = append(fails, fmt.Sprintf("%s: %d pairs of holds broke the tokens' order (a hold that asked "+
				"after another had its token got one not above it); tokens must keep increasing, whatever the fault",
				at, n))
		}
		if r.fault == "mixed" {
			fails = append(fails, mixedVerdict(r, at)...)
			continue
		}
		if mayOverlap(r.fault) {
			continue
		}
		if r.lock.holds > 0 {
			fails = append(fails, fmt.Sprintf("%s: %s began while a hold they conflict with was still "+
				"believed held (longest overlap %s); %s must cause no overlap",
				at, plural(r.lock.holds, "hold"), ms(r.lock.longest), r.fault))
		}
		if !fenced(r.prim) && d.dataViolations() > 0 {
			fails = append(fails, fmt.Sprintf("%s: the resource saw %s and %s above the permits; %s must "+
				"cause no overlap", at, plural(d.lostUpdates, "lost update"), plural(d.overCapacity, "entry"), r.fault))
		}
	}
	return fails
}

// mixedVerdict judges a mixed segment's overlaps by the fault under way
// when each began: one under a fault that must cause none, or while no
// fault was under way, fails. An unfenced primitive's data violations
// follow from overlaps, so they fail only when no fault that may overlap
// caused any.
func mixedVerdict(r segResult, at string) []string {
	var fails []string
	excused := 0
	for _, k := range sortedKinds(r.byFault) {
		v := r.byFault[k]
		switch {
		case explained(k):
			excused += v.holds
		case k == noFault:
			fails = append(fails, fmt.Sprintf("%s: %s began while a hold they conflict with was still believed "+
				"held (longest overlap %s), while no fault was under way; an overlap must follow a fault that may "+
				"cause it", at, plural(v.holds, "hold"), ms(v.longest)))
		default:
			fails = append(fails, fmt.Sprintf("%s: %s began while a hold they conflict with was still believed "+
				"held (longest overlap %s), under its %s fault or in the quiet time after it; %s must cause no overlap",
				at, plural(v.holds, "hold"), ms(v.longest), k, k))
		}
	}
	if d := r.data; !fenced(r.prim) && d.dataViolations() > 0 && excused == 0 {
		fails = append(fails, fmt.Sprintf("%s: the resource saw %s and %s above the permits with no overlap "+
			"under a fault that may cause one", at, plural(d.lostUpdates, "lost update"), plural(d.overCapacity, "entry")))
	}
	return fails
}

// verdictText is the verdict's report for the terminal: the failures, or
// what passed.
func verdictText(results []segResult) (string, bool) {
	fails := verdict(results)
	if len(fails) == 0 {
		n := 0
		for _, r := range results {
			n += len(r.injected)
		}
		return fmt.Sprintf("verdict: PASS (%d segments, %d faults injected: no stale write accepted with "+
			"fencing, no overlap under faults that must cause none)\n", len(results), n), true
	}
	var b strings.Builder
	for _, f := range fails {
		b.WriteString("FAIL " + f + "\n")
	}
	fmt.Fprintf(&b, "verdict: FAIL (%d)\n", len(fails))
	return b.String(), false
}

// smokeTime is the smoke run's -time: each segment stretched to about
// twice its shortest, so a fault is injected more than once where it is
// short, and the whole run (build and teardown included) stays near a
// minute on a 2-core machine.
const smokeTime = 40 * time.Second

// smokeConfig makes c the smoke run: the pairs of smokePairs instead of
// every primitive under every fault kind; -primitives and -faults, which
// would contradict them, are refused.
func (c *config) smokeConfig(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["primitives"] || given["faults"] {
		return fmt.Errorf("-smoke runs its own pairs (%s): it takes no -primitives or -faults", pairsText(smokePairs))
	}
	if !given["time"] {
		c.total = smokeTime
	}
	c.pairs, c.prims, c.faults = smokePairs, nil, nil
	for _, p := range smokePairs {
		c.prims, c.faults = append(c.prims, p[0]), append(c.faults, p[1])
	}
	return nil
}

func pairsText(pairs [][2]string) string {
	var s []string
	for _, p := range pairs {
		s = append(s, p[0]+"/"+p[1])
	}
	return strings.Join(s, ", ")
}
