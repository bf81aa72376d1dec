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
	"giveUp", "outlive", "stall", "cut",
	"reenter", "tryReenter", "unlockInner", "downgrade", "otherTry", "refuseRest"}

// netFault is a fault injected around one call.
type netFault uint8

const (
	faultNone   netFault = iota
	faultRefuse          // the call goes through a proxy refusing connections
	faultDrop            // the reply of the next script call on the name is lost
	faultGiveUp          // the call is in flight while the watchdog gives the hold up
)

var faultNames = [...]string{"", "refuse", "drop", "giveUp"}

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
	case opLock, opTryLock, opUnlock, opCancelled, opDo, opForce, opOtherTry:
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

// stepsGen draws sequences of at most maxLen steps, with the read side
// only for an rwlock, and with faultGiveUp only when giveUp is set: the
// give-up finds a defect in most sequences, and a run stops at its first
// failing sequence, so a profile without it lets the others show.
func stepsGen(rw, giveUp bool, maxLen int) *rapid.Generator[[]netStep] {
	// rapid draws the first entries a little more often and shrinks
	// towards them: the calls and faults that reach the engine's hardest
	// paths (re-entries, their Unlocks, releases that fail) come first.
	faults := []netFault{faultRefuse, faultNone, faultNone, faultDrop}
	tops := []netOp{opDo, opDo, opDo, opLock, opUnlock, opTryLock, opOutlive, opForce, opCancelled, opStall, opCut}
	if giveUp {
		faults = append([]netFault{faultGiveUp}, faults...)
		tops = append(tops, opGiveUp)
	}
	fault := rapid.SampledFrom(faults)
	read := rapid.Just(false)
	if rw {
		read = rapid.Bool()
	}
	inners := []netOp{opReenter, opUnlockInner, opReenter, opUnlockInner, opDowngrade, opRefuseRest,
		opReenter, opUnlockInner, opDowngrade, opTryReenter, opOtherTry, opForce}
	inner := rapid.Custom(func(t *rapid.T) netStep {
		s := netStep{Op: rapid.SampledFrom(inners).Draw(t, "inner")}
		switch s.Op {
		case opOtherTry, opForce:
			s.H = rapid.IntRange(0, 2).Draw(t, "h")
		case opRefuseRest:
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
