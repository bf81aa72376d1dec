package faulttest_test

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"
)

// The steps of the property test are plain data: rapid draws them, the
// runner plays them, and a failing sequence, once shrunk, is written down
// as a literal in the regression table (property_test.go). A literal
// replays the same calls and faults whatever rapid's version or the
// generators' shape, which a seed or a fail file (a bit stream fed to
// the generators of the day) does not.

// netOp is what a step does.
type netOp uint8

const (
	// Calls of handle H, with a ctx that carries no hold.
	opLock      netOp = iota // Lock (RLock when Read), bounded by a short ctx
	opTryLock                // TryLock (TryRLock)
	opUnlock                 // Unlock (RUnlock) of a level the model counts
	opCancelled              // Lock (RLock) with a ctx already cancelled
	opDo                     // Do (RDo) running Body in fn; Fault is around Do's own release
	opForce                  // ForceUnlock
	// A fresh handle of client B tries the mode the model says is free,
	// until netFree past the last fault has passed. The runner probes
	// after every step; a literal may ask for one inside Do's fn.
	opProbe
	// Faults on client A (handles 0 and 1, through the proxy).
	opGiveUp  // renewals fail until the watchdog gives up; the keys stand on
	opOutlive // the proxy stalls until A's holds have run out in Redis
	opStall   // a stall shorter than a renewal interval
	opCut     // every connection reset
	// Handle H's Lock (RLock when Read) whose attempt the proxy holds
	// until the Lock has given up; the held copy arrives late, while the
	// handle's next wait is in line (behind the holders the model counts,
	// which then release, and ahead of another handle's wait) or holds.
	opLate
	// Handle H's Unlock (RUnlock) of its only level, whose release the
	// proxy holds until the Unlock has given up; the handle takes the
	// mode again, handle 2 waits behind it, and the held copy arrives
	// late. In a write Do's fn: the same of the read level a downgrade
	// took, taken again by a downgrade.
	opLateUnlock
	// Inner steps, in Do's fn, with the ctx Do gives (Keep: WithoutCancel
	// of it).
	opReenter     // Lock (RLock for RDo) through Do's ctx
	opTryReenter  // TryLock (TryRLock) through Do's ctx
	opUnlockInner // Unlock (RUnlock) of a level re-entered
	opDowngrade   // RLock through a write Do's ctx: kept past Do
	opOtherTry    // handle H's TryLock, plain: must be refused
	opRefuseRest  // the proxy refuses connections until Do has returned
)

var opNames = [...]string{"lock", "tryLock", "unlock", "cancelled", "do", "force", "probe",
	"giveUp", "outlive", "stall", "cut", "late", "lateUnlock",
	"reenter", "tryReenter", "unlockInner", "downgrade", "otherTry", "refuseRest"}

// netFault is a fault injected around one call.
type netFault uint8

const (
	faultNone   netFault = iota
	faultRefuse          // the call goes through a proxy refusing connections
	faultDrop            // the reply of the next script call on the name is lost
	faultGiveUp          // the watchdog gives client A's holds up before the call (a re-entry's: with it in flight)
	// A call of a handle that holds (a first goroutine's level of the
	// mode, taken first when the model counts none) made by a second
	// goroutine, with a ctx the loss does not cancel: in flight while the
	// watchdog gives client A's holds up, the keys standing on (Loss), or
	// while Redis loses every key of the name (DataLoss). In Do's fn, on a
	// re-entry or an inner Unlock, it is the same without the first level;
	// on a Do, the call in flight is Do's own release.
	faultLoss
	faultDataLoss
)

var faultNames = [...]string{"", "refuse", "drop", "giveUp", "loss", "dataLoss"}

// across reports whether f is a loss with the call in flight, and which.
func (f netFault) across() (yes, dataLoss bool) {
	return f == faultLoss || f == faultDataLoss, f == faultDataLoss
}

// netStep is one step of a sequence.
type netStep struct {
	Op    netOp
	H     int // the handle: 0 and 1 on client A (the proxy), 2 on client B
	Read  bool
	Keep  bool
	Fault netFault
	Body  []netStep
}

func (s netStep) String() string {
	var b strings.Builder
	b.WriteString(opNames[s.Op] + "(")
	switch s.Op {
	case opLock, opTryLock, opUnlock, opCancelled, opDo, opForce, opOtherTry, opLate, opLateUnlock:
		fmt.Fprintf(&b, "h%d", s.H)
	}
	if s.Read {
		b.WriteString(",read")
	}
	if s.Keep {
		b.WriteString(",keep")
	}
	if s.Fault != faultNone {
		b.WriteString("," + faultNames[s.Fault])
	}
	b.WriteString(")")
	if s.Op == opDo {
		fmt.Fprintf(&b, "%v", s.Body)
	}
	return b.String()
}

// GoString makes rapid's log of a drawn sequence readable and pastable.
func (s netStep) GoString() string { return s.String() }

// netProfile is a choice of the steps and faults a sequence is drawn
// from. A run stops at its first failing sequence, so each profile lets
// the defects of its own class show.
type netProfile struct {
	name string
	// giveUp adds the watchdog's give-ups, before a call or with a call
	// in flight: a give-up found a defect in most sequences.
	giveUp bool
	// inFlight draws short sequences of second goroutines' calls in
	// flight across losses and of late copies, without the faults that
	// leave Redis noisy (refused connections, lost replies), so that the
	// checks that need a quiet Redis (e) apply.
	inFlight bool
}

var netProfiles = []netProfile{{"giveUp=false", false, false}, {"giveUp=true", true, false}, {"inFlight", true, true}}

// stepsGen draws sequences of at most maxLen steps (netInFlightSteps in
// the in-flight profile) of profile p, with the read side only for an
// rwlock.
func stepsGen(rw bool, p netProfile, maxLen int) *rapid.Generator[[]netStep] {
	// rapid draws the first entries a little more often and shrinks
	// towards them: the calls and faults that reach the engine's hardest
	// paths (re-entries, their Unlocks, releases that fail) come first.
	faults := []netFault{faultRefuse, faultNone, faultNone, faultDrop}
	tops := []netOp{opDo, opDo, opDo, opLock, opUnlock, opTryLock, opOutlive, opForce, opCancelled, opStall, opCut, opLate, opLateUnlock}
	inners := []netOp{opReenter, opUnlockInner, opReenter, opUnlockInner, opDowngrade, opRefuseRest,
		opReenter, opUnlockInner, opDowngrade, opTryReenter, opOtherTry, opForce, opLateUnlock}
	switch {
	case p.inFlight:
		faults = []netFault{faultLoss, faultDataLoss, faultNone}
		tops = []netOp{opUnlock, opLock, opTryLock, opLate, opLateUnlock, opDo}
		inners = []netOp{opReenter, opUnlockInner, opDowngrade, opTryReenter, opLateUnlock}
		maxLen = netInFlightSteps
	case p.giveUp:
		faults = append([]netFault{faultGiveUp, faultLoss, faultDataLoss}, faults...)
		tops = append(tops, opGiveUp)
	}
	fault := rapid.SampledFrom(faults)
	read := rapid.Just(false)
	if rw {
		read = rapid.Bool()
	}
	inner := rapid.Custom(func(t *rapid.T) netStep {
		s := netStep{Op: rapid.SampledFrom(inners).Draw(t, "inner")}
		switch s.Op {
		case opOtherTry, opForce:
			s.H = rapid.IntRange(0, 2).Draw(t, "h")
		case opRefuseRest, opLateUnlock:
		default:
			s.Keep = rapid.Bool().Draw(t, "keep")
			s.Fault = fault.Draw(t, "fault")
		}
		return s
	})
	top := rapid.Custom(func(t *rapid.T) netStep {
		s := netStep{Op: rapid.SampledFrom(tops).Draw(t, "op")}
		switch s.Op {
		case opLock, opTryLock, opUnlock, opCancelled, opForce:
			s.H = rapid.IntRange(0, 2).Draw(t, "h")
			s.Read = read.Draw(t, "read")
			s.Fault = fault.Draw(t, "fault")
		case opLate, opLateUnlock:
			s.H = rapid.IntRange(0, 1).Draw(t, "h") // on client A: the proxy holds the script
			s.Read = read.Draw(t, "read")
		case opDo:
			s.H = rapid.IntRange(0, 2).Draw(t, "h")
			s.Read = read.Draw(t, "read")
			s.Fault = fault.Draw(t, "fault") // around Do's own release
			s.Body = rapid.SliceOfN(inner, 1, 4).Draw(t, "body")
		}
		return s
	})
	return rapid.SliceOfN(top, 1, maxLen)
}
