package faulttest_test

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The net of issue 41: a model-based property test of rlock, fairlock and
// rwlock through their public API, under the fault proxy. rapid
// (pgregory.net/rapid) draws the sequences and shrinks a failing one to
// a short one; it is worth its place as a test dependency because it is
// small, has no dependencies of its own, and does stateful testing with
// shrinking, which a hand-rolled random walk would have to grow.
//
// The checks (see netRun): (a) at most one writer, or readers and no
// writer, among handles whose Done is open; (b) a mode nobody holds is
// free, and once every caller has returned and every level is released
// every key of the name is gone, within netFree past the last fault (a
// lease, plus a grant lease for a waiter that gave up); (c) under
// WithFencing a new hold's token is not 0 and above every earlier one of
// the name, and a re-entry keeps its hold's; (d) Done closes when, and
// only when, the hold was released or Redis lost it; (e) when nothing a
// fault left may stand in Redis but what the model counts and holds
// given up, a handle is not refused by its own given-up hold (the release
// it owes is sent before its next attempt), and a release grants the
// first wait in line, a late copy of a given-up attempt notwithstanding.
//
// It runs in the test command; alone:
//
//	go test -race -run 'TestNet' -timeout 5m ./internal/faulttest/
//
// The bounded run makes netChecks checks per primitive and profile
// (netProfiles), each with a new random seed, and replays netRegressions,
// each in parallel (-parallel, GOMAXPROCS by default, bounds how many
// wait at once: they wait on leases, not on the CPU): about half a
// minute on a busy 2-core machine, estimated from the checks that pass
// today;
// REDISYNC_PROPERTY=long makes netLongChecks. -rapid.checks, -rapid.seed,
// -rapid.shrinktime (or RAPID_CHECKS, ...) given explicitly win over both.
const (
	netChecks        = 1
	netLongChecks    = 60
	netMaxSteps      = 6
	netInFlightSteps = 4
)

// netRapidFlags sets rapid's flags for the run asked for, leaving alone
// those given on the command line or in rapid's environment variables.
// Fail files are off: a failing sequence is kept as a literal in
// netRegressions instead (see property_steps_test.go for why).
func netRapidFlags() {
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	want := map[string]string{"rapid.checks": strconv.Itoa(netChecks), "rapid.shrinktime": "5s", "rapid.nofailfile": "true"}
	if os.Getenv("REDISYNC_PROPERTY") == "long" {
		want["rapid.checks"], want["rapid.shrinktime"] = strconv.Itoa(netLongChecks), "3m"
	}
	for name, v := range want {
		env := "RAPID_" + strings.ToUpper(strings.TrimPrefix(name, "rapid."))
		if _, set := os.LookupEnv(env); !given[name] && !set {
			_ = flag.Set(name, v)
		}
	}
}

func TestNetProperty(t *testing.T) {
	netRapidFlags()
	for _, k := range netKinds {
		for _, p := range netProfiles {
			t.Run(k.name+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				rapid.Check(t, func(rt *rapid.T) {
					fenced := rapid.Bool().Draw(rt, "fenced")
					steps := stepsGen(k.name == "rwlock", p, netMaxSteps).Draw(rt, "steps")
					newNetRun(rt, t, rt.Cleanup, k, fenced).play(steps)
				})
			})
		}
	}
}

// Sequences of the defects of issue 41, and failing sequences rapid
// found, shrunk by hand, kept as literals (see property_steps_test.go).
var (
	// A Do whose re-entered level's Unlock fails (connection refused):
	// defect 1, and with a next Lock, defect 2.
	failedInner     = netStep{Op: opDo, Body: []netStep{{Op: opReenter}, {Op: opUnlockInner, Fault: faultRefuse}}}
	failedInnerRead = netStep{Op: opDo, Read: true, Body: failedInner.Body}
	// A re-entry (downgrade) with WithoutCancel of Do's ctx in flight
	// while the watchdog gives the hold up: defect 3, and with a next
	// Lock, defect 4.
	revived          = netStep{Op: opDo, Body: []netStep{{Op: opReenter, Keep: true, Fault: faultGiveUp}}}
	revivedDowngrade = netStep{Op: opDo, Body: []netStep{{Op: opDowngrade, Keep: true, Fault: faultGiveUp}}}
	// A write Do whose own release is refused under the read level it
	// took (a downgrade); the probe after it is another reader: defect 5.
	failedUnderRead = netStep{Op: opDo, Fault: faultRefuse, Body: []netStep{{Op: opDowngrade}}}
	lockH0          = netStep{Op: opLock}
	// The net's own: a release given up before the call took the
	// model's count of the handle's levels below zero.
	releaseAfterGiveUp = []netStep{{Op: opTryLock}, {Op: opUnlock, Fault: faultGiveUp}, {Op: opDo, Body: []netStep{{Op: opReenter}}}}
	// The net's own: a data loss took client B's hold too, which the
	// model counted as standing.
	dataLossOfB = []netStep{{Op: opLock, H: 2, Read: true, Fault: faultLoss}, {Op: opTryLock, H: 1, Read: true, Fault: faultDataLoss},
		{Op: opTryLock, H: 1, Read: true}, {Op: opTryLock, H: 2, Fault: faultLoss}}
	// The races a review of the hold-id engine found (hold_races_test.go),
	// each found again by the net with its fix undone: a second
	// goroutine's RLock in flight while the hold is lost, the keys
	// standing on (it revived the given-up hold) or lost by Redis (its new
	// level was released under it); a second goroutine's RUnlock, or a
	// write Do's own release under the read level it took, in flight
	// across the loss (nobody owed the level left); a late copy of a
	// given-up wait's attempt while the handle's next wait is in line (it
	// took that wait's place).
	readAcrossLoss     = netStep{Op: opLock, Read: true, Fault: faultLoss}
	readAcrossDataLoss = netStep{Op: opLock, Read: true, Fault: faultDataLoss}
	releaseAcrossLoss  = netStep{Op: opUnlock, Read: true, Fault: faultLoss}
	doReleaseAcross    = netStep{Op: opDo, Fault: faultLoss, Body: []netStep{{Op: opDowngrade}}}
	lateAttempt        = netStep{Op: opLate}
	// The net's own: a late copy of a release, held until its Unlock gave
	// up, arriving once the handle holds again; for a read level taken
	// by a downgrade, the read-level tags' case (the copy removed the
	// read level the handle took again).
	lateRelease          = []netStep{{Op: opTryLock}, {Op: opLateUnlock}}
	lateReadRelease      = []netStep{{Op: opTryLock, Read: true}, {Op: opLateUnlock, Read: true}}
	lateDowngradeRelease = []netStep{{Op: opDo, Body: []netStep{{Op: opDowngrade}}}, {Op: opLateUnlock, Read: true}}
	lateReadUnderWrite   = netStep{Op: opDo, Body: []netStep{{Op: opDowngrade}, {Op: opLateUnlock}}}
)

var netRegressions = []struct {
	name   string
	kind   netKind
	fenced bool
	steps  []netStep
}{
	{"1-failed-inner-unlock/rlock", netRlock, false, []netStep{failedInner}},
	{"1-failed-inner-unlock/fairlock", netFairlock, false, []netStep{failedInner}},
	{"1-failed-inner-unlock/rwlock-write", netRWlock, false, []netStep{failedInner}},
	{"1-failed-inner-unlock/rwlock-read", netRWlock, false, []netStep{failedInnerRead}},
	{"2-next-token/rlock", netRlock, true, []netStep{failedInner, lockH0}},
	{"2-next-token/fairlock", netFairlock, true, []netStep{failedInner, lockH0}},
	{"2-next-token/rwlock", netRWlock, true, []netStep{failedInner, lockH0}},
	{"3-revived/rlock", netRlock, false, []netStep{revived}},
	{"3-revived/fairlock", netFairlock, false, []netStep{revived}},
	{"3-revived/rwlock-write", netRWlock, false, []netStep{revived}},
	{"3-revived/rwlock-downgrade", netRWlock, false, []netStep{revivedDowngrade}},
	{"4-token-0/rlock", netRlock, true, []netStep{revived, lockH0}},
	{"4-token-0/fairlock", netFairlock, true, []netStep{revived, lockH0}},
	{"4-token-0/rwlock-write", netRWlock, true, []netStep{revived, lockH0}},
	{"4-token-0/rwlock-downgrade", netRWlock, true, []netStep{revivedDowngrade, lockH0}},
	{"5-failed-write-unlock-under-read", netRWlock, false, []netStep{failedUnderRead}},
	{"net-release-after-give-up", netRlock, false, releaseAfterGiveUp},
	{"net-data-loss-of-client-b", netRWlock, true, dataLossOfB},
	{"review-read-across-loss", netRWlock, true, []netStep{readAcrossLoss}},
	{"review-read-across-data-loss", netRWlock, false, []netStep{readAcrossDataLoss}},
	{"review-release-across-loss", netRWlock, true, []netStep{releaseAcrossLoss}},
	{"review-release-across-loss/do-downgrade", netRWlock, false, []netStep{doReleaseAcross}},
	{"review-late-attempt/rlock", netRlock, false, []netStep{lateAttempt}},
	{"review-late-attempt/fairlock", netFairlock, false, []netStep{lateAttempt}},
	{"net-late-release/rlock", netRlock, true, lateRelease},
	{"net-late-release/fairlock", netFairlock, false, lateRelease},
	{"net-late-release/rwlock-write", netRWlock, true, lateRelease},
	{"net-late-release/rwlock-read", netRWlock, false, lateReadRelease},
	{"net-late-release/rwlock-downgrade", netRWlock, false, lateDowngradeRelease},
	{"net-late-release/rwlock-read-under-write", netRWlock, true, []netStep{lateReadUnderWrite}},
}

func TestNetRegressions(t *testing.T) {
	for _, c := range netRegressions {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // they wait on leases, not on the CPU
			newNetRun(t, t, t.Cleanup, c.kind, c.fenced).play(c.steps)
		})
	}
}
