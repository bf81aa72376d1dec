package faulttest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// play runs steps, checking the model after each, and finishes the run.
func (r *netRun) play(steps []netStep) {
	r.t.Helper()
	r.t.Logf("sequence (fenced: %v): %v", r.fenced, steps)
	for i, s := range steps {
		r.step(s)
		r.check(fmt.Sprintf("after step %d %v", i, s))
		r.probe(fmt.Sprintf("after step %d %v", i, s))
	}
	r.finish()
}

func (r *netRun) step(s netStep) {
	r.t.Helper()
	switch s.Op {
	case opLock, opTryLock, opCancelled:
		r.acquire(s)
	case opUnlock:
		r.release(s)
	case opDo:
		r.do(s)
	case opForce:
		r.force(s.H)
	case opProbe:
		r.probe("on its own")
	case opGiveUp:
		r.giveUp()
	case opOutlive:
		r.outlive()
	case opStall:
		r.mayLose()
		r.proxy.Stall()
		time.Sleep(netLease / 6) // the fault is its length: under a renewal interval
		r.proxy.Resume()
	case opCut:
		r.mayLose()
		r.proxy.Cut()
	case opLate:
		r.late(s)
	case opLateUnlock:
		r.lateUnlock(s)
	}
	if s.Op == opStall || s.Op == opCut {
		r.noise(0, 1)
	}
}

// inject arms fault f around a call of handle h and returns what ends it.
// The proxy's faults reach client A only. A give-up here comes before the
// call (a loss with a call in flight is played by across and reenter;
// where neither plays it, it is a give-up before the call).
func (r *netRun) inject(f netFault, h int) func() {
	if across, _ := f.across(); across || f == faultGiveUp {
		r.giveUp()
		return func() {}
	}
	if !onA(h) || f == faultNone {
		return func() {}
	}
	r.noise(0, 1) // a renewal's, or the call's, left in Redis
	switch f {
	case faultRefuse:
		r.mayLose()
		r.proxy.Refuse(true)
		r.proxy.Cut()
		return func() { r.proxy.Refuse(false); r.noise(0, 1) }
	case faultDrop:
		r.mayLose() // the reply lost may be a renewal's
		lock := keyspace.NewNames(r.name).Lock()
		r.drop = r.proxy.DropReply(func(args []string) bool { return redistest.IsScriptCall(args, lock) })
	}
	return func() {}
}

// acquire plays a plain Lock, TryLock or a Lock with a cancelled ctx.
func (r *netRun) acquire(s netStep) {
	r.t.Helper()
	m := &r.m[s.H]
	if across, _ := s.Fault.across(); across && s.Op != opCancelled && onA(s.H) {
		r.across(s) // a second goroutine's: it may wait for the handle's own hold
		return
	}
	if s.Op == opLock && m.levels() > 0 {
		return // it would wait for the handle's own hold until its ctx ends
	}
	ops, read := r.side(s.H, s.Read)
	defer r.inject(s.Fault, s.H)()
	ctx, cancel := context.WithTimeout(r.ctx, netLease)
	defer cancel()
	var ok bool
	switch s.Op {
	case opLock:
		ok = ops.Lock(ctx) == nil
	case opTryLock:
		ok, _ = ops.TryLock(ctx)
	case opCancelled:
		cancel()
		ok = ops.Lock(ctx) == nil
	}
	switch {
	case !ok && s.Op != opTryLock:
		r.noise(s.H) // a wait given up: a place or a grant may stay a while
	case !ok:
	case read:
		m.r++
	default:
		m.w++
		r.newHold(s.H)
	}
}

// release plays a plain Unlock of a level the model counts. Whatever it
// returns, the caller is done with that level; a failed release of the
// last level ends the hold.
func (r *netRun) release(s netStep) {
	m := &r.m[s.H]
	ops, read := r.side(s.H, s.Read)
	n := &m.w
	if read {
		n = &m.r
	}
	if across, _ := s.Fault.across(); across && onA(s.H) {
		r.across(s)
		return
	}
	if *n == 0 {
		return
	}
	defer r.inject(s.Fault, s.H)()
	if ops.Unlock(r.ctx) != nil {
		m.mayLose = true
	}
	*n = max(*n-1, 0) // a give-up before the call took every level already
}

// do plays Do (RDo) with s.Body as fn, on a handle that holds nothing.
func (r *netRun) do(s netStep) {
	r.t.Helper()
	h, m := s.H, &r.m[s.H]
	ops, read := r.side(h, s.Read)
	if m.levels() > 0 || r.taken(h, read) {
		// It would wait for the handle's own hold, or for another's
		// until its ctx ends (plain Lock steps wait, with a short ctx).
		return
	}
	// Bounded for a Do that waits behind a hold a fault left standing;
	// the body's steps are bounded by their own ctxs.
	ctx, cancel := context.WithTimeout(r.ctx, netStand+4*netLease)
	defer cancel()
	refusing, ran, end := false, false, func() {}
	err := ops.Do(ctx, func(ctx context.Context) error {
		ran = true
		m.do, m.doRead = 1, read
		if !read {
			r.newHold(h)
		}
		r.check("as Do began")
		for i, in := range s.Body {
			refusing = r.inner(ctx, h, read, in) || refusing
			r.check(fmt.Sprintf("after inner step %d %v", i, in))
		}
		// fn gives back the levels it re-entered, as a deferred Unlock
		// would; whether each one succeeds is the engine's business.
		for ; m.do > 1; m.do-- {
			_ = ops.Unlock(ctx)
		}
		switch across, dataLoss := s.Fault.across(); {
		case refusing:
		case across && onA(h):
			end = r.lossAround(dataLoss) // Do's own release in flight across it
		default:
			end = r.inject(s.Fault, h) // around Do's own release
		}
		return nil
	})
	end()
	if refusing {
		r.proxy.Refuse(false)
	}
	if ran {
		m.do = 0
		if err != nil {
			m.mayLose = true // Do's own release failed
		}
	}
}

// taken reports whether a handle other than h holds, as the model and
// Done say, a mode that excludes mode read.
func (r *netRun) taken(h int, read bool) bool {
	for o := range r.m {
		if o != h && !isClosed(r.hs[o].Done()) && (r.m[o].writes() || !read && r.m[o].levels() > 0) {
			return true
		}
	}
	return false
}

// inner plays one step of Do's fn on handle h, whose Do is of mode read.
// It reports whether it left the proxy refusing.
func (r *netRun) inner(doCtx context.Context, h int, read bool, in netStep) bool {
	r.t.Helper()
	m := &r.m[h]
	ops, _ := r.side(h, read)
	ctx := doCtx
	if in.Keep {
		ctx = context.WithoutCancel(doCtx) // a ctx the loss does not cancel
	}
	ctx, cancel := context.WithTimeout(ctx, 3*netLease)
	defer cancel()
	switch in.Op {
	case opReenter, opTryReenter, opDowngrade:
		r.reenter(ctx, h, read, in)
	case opUnlockInner:
		if m.do < 2 {
			return false
		}
		if across, dataLoss := in.Fault.across(); across && onA(h) {
			_ = r.lossAcross(func() error { return ops.Unlock(ctx) }, dataLoss)
			return false
		}
		defer r.inject(in.Fault, h)()
		_ = ops.Unlock(ctx)
		m.do--
	case opLateUnlock:
		if !read {
			r.lateReadUnderWrite(ctx, h)
		}
	case opOtherTry:
		o := in.H
		if o == h {
			o = (h + 1) % len(r.hs)
		}
		if ok, _ := r.hs[o].write.TryLock(r.ctx); ok {
			r.m[o].w++ // (a) tells whether it may have it
			r.newHold(o)
		}
	case opForce:
		r.force(in.H)
	case opProbe:
		r.probe(fmt.Sprintf("in handle %d's Do", h))
	case opRefuseRest:
		if onA(h) {
			r.mayLose()
			r.noise(0, 1)
			r.proxy.Refuse(true)
			r.proxy.Cut()
			return true
		}
	}
	return false
}

// reenter plays a re-entry, a TryLock through Do's ctx, or a downgrade
// (an RLock through a write Do's ctx), under fault in.Fault.
func (r *netRun) reenter(ctx context.Context, h int, read bool, in netStep) {
	r.t.Helper()
	m := &r.m[h]
	ops, _ := r.side(h, read)
	lock, unlock := ops.Lock, ops.Unlock
	downgrade := in.Op == opDowngrade && !read && r.hs[h].rw != nil
	switch {
	case downgrade:
		lock, unlock = r.hs[h].rw.RLock, r.hs[h].rw.RUnlock
	case in.Op == opTryReenter:
		lock = func(ctx context.Context) error {
			if ok, err := ops.TryLock(ctx); !ok {
				return fmt.Errorf("refused: %v", err)
			}
			return nil
		}
	}
	across, dataLoss := in.Fault.across()
	if (across || in.Fault == faultGiveUp) && onA(h) && m.do > 0 {
		// The call is in flight while the watchdog gives the hold up. A
		// level it got back is given back, as its caller would.
		if r.lossAcross(func() error { return lock(ctx) }, dataLoss) == nil {
			_ = unlock(ctx)
		}
		return
	}
	defer r.inject(in.Fault, h)()
	if lock(ctx) != nil {
		return
	}
	if downgrade {
		m.r++ // a plain read hold, kept past Do
		return
	}
	m.do++
	if tok := r.hs[h].Token(); r.fenced && !read && (tok == 0 || tok != m.token) {
		r.fail("c-reenter", "(c) a re-entry of handle %d's hold has token %d, want the hold's %d", h, tok, m.token)
	}
}
