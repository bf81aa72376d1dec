package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Losses with a call in flight: the watchdog gives client A's holds up
// (or Redis loses them) while a call of a handle is on its way to Redis.

// giveUp holds client A's renewals back until the watchdog gives up
// every hold of client A, while their keys stand on for netStand.
func (r *netRun) giveUp() {
	r.t.Helper()
	_ = r.lossAcross(nil, false)
}

// lossAcross is giveUp with call (if not nil) in flight across the
// give-up: sent once the first renewal failed, held on its way to Redis
// until every Done of client A closed and, with dataLoss, Redis lost
// every key of the name. It returns the call's error.
func (r *netRun) lossAcross(call func() error, dataLoss bool) error {
	r.t.Helper()
	holders := r.holdersOnA()
	if len(holders) == 0 {
		return errNoHold
	}
	standFor(r.ctx, r.b, r.name, netStand)
	r.settled = time.Now().Add(netStand)
	if !r.faults.holdRenewals(netLease) {
		r.t.Fatalf("no renewal failed within a lease: the fault was not injected")
	}
	res := make(chan error, 1)
	gate := r.faults.holdNextScript()
	if call != nil {
		go func() { res <- call() }()
		select {
		case <-gate.caught:
		case err := <-res: // it sent nothing
			res <- err
		case <-time.After(4 * netLease):
			r.fail("across", "a call neither sent a script nor returned within %v of the first failed renewal", 4*netLease)
		}
	}
	r.closedWithin(holders, 3*netLease, "renewals began to fail")
	if dataLoss {
		for _, k := range nameKeys(r.ctx, r.b, r.name) {
			r.b.Del(r.ctx, k)
		}
		r.mayLoseAll()
	}
	r.faults.failPipes.Store(false)
	r.faults.let(gate)
	r.lost(holders...)
	for _, h := range holders {
		r.stands[h] = r.settled.Add(netSlack)
	}
	if call == nil {
		return nil
	}
	return <-res
}

// lossAround is lossAcross for a call the caller makes itself once
// lossAround returned (Do's own release, sent after fn): it starts the
// give-up, with the next script call of client A held until every Done of
// client A closed, and returns what the caller runs once the call has
// returned: it waits for the loss to end and records it. The loss's
// goroutine only watches and lets the call go; the run's records are the
// caller's.
func (r *netRun) lossAround(dataLoss bool) (end func()) {
	r.t.Helper()
	holders := r.holdersOnA()
	if len(holders) == 0 {
		return func() {}
	}
	standFor(r.ctx, r.b, r.name, netStand)
	r.settled = time.Now().Add(netStand)
	if !r.faults.holdRenewals(netLease) {
		r.t.Fatalf("no renewal failed within a lease: the fault was not injected")
	}
	gate := r.faults.holdNextScript()
	closed := make(chan bool, 1)
	go func() {
		timer := time.NewTimer(4 * netLease)
		defer timer.Stop()
		select {
		case <-gate.caught:
		case <-timer.C: // the call sent nothing
		}
		ok := waitUntil(3*netLease, func() bool {
			for _, h := range holders {
				if !isClosed(r.hs[h].Done()) {
					return false
				}
			}
			return true
		})
		if dataLoss {
			for _, k := range nameKeys(r.ctx, r.b, r.name) {
				r.b.Del(r.ctx, k)
			}
		}
		r.faults.failPipes.Store(false)
		r.faults.let(gate)
		closed <- ok
	}()
	return func() {
		r.t.Helper()
		if !<-closed {
			r.fail("d-loss", "(d) a Done of client A still open %v after renewals began to fail, with a release in flight", 3*netLease)
		}
		if dataLoss {
			r.mayLoseAll()
		}
		r.lost(holders...)
		for _, h := range holders {
			r.stands[h] = r.settled.Add(netSlack)
		}
	}
}

// mayLoseAll marks every hold as possibly ended: Redis lost the keys of
// client B's holds too.
func (r *netRun) mayLoseAll() {
	for h := range r.m {
		r.m[h].mayLose = true
	}
}

// errNoHold is lossAcross's error when client A holds nothing to give
// up: the call was not made.
var errNoHold = errors.New("client A holds nothing to give up")

// across plays s, a Lock, TryLock or Unlock of handle s.H (on client A),
// as a second goroutine's call in flight while the hold is lost (s.Fault).
// The handle first holds a level of the mode, a first goroutine's, taken
// now when the model counts none (and a second read level for the release
// of one, so that one stays). A level the call took is a new hold's, taken
// once the faults ended: the engine gets two renewals' time to end it
// wrongly (by a release it owed for the old hold), which check sees (d).
func (r *netRun) across(s netStep) {
	r.t.Helper()
	h, m := s.H, &r.m[s.H]
	ops, read := r.side(h, s.Read)
	n := &m.w
	if read {
		n = &m.r
	}
	want := 1
	if s.Op == opUnlock && read {
		want = 2
	}
	if m.levels() == 0 || *n > 0 && *n < want {
		r.firstLevels(h, read, want)
	}
	switch {
	case s.Op == opUnlock && *n == 0:
		return // the mode is not held: nothing to release
	case s.Op == opLock && r.taken(h, read):
		return // it would wait out another handle's hold
	}
	_, dataLoss := s.Fault.across()
	ctx, cancel := context.WithTimeout(r.ctx, 4*netLease) // the loss does not cancel it
	defer cancel()
	call := func() error { return ops.Unlock(ctx) }
	switch s.Op {
	case opLock:
		call = func() error { return ops.Lock(ctx) }
	case opTryLock:
		call = func() error {
			if ok, err := ops.TryLock(ctx); !ok {
				return fmt.Errorf("refused: %v", err)
			}
			return nil
		}
	}
	err := r.lossAcross(call, dataLoss)
	switch {
	case errors.Is(err, errNoHold), s.Op == opUnlock:
		return // the level released went with the hold
	case err != nil:
		r.noise(h) // a wait that failed may leave a place a while
		return
	case read:
		m.r++
	default:
		m.w++
		r.newHold(h)
	}
	time.Sleep(netLease)
}

// firstLevels takes levels of mode read for handle h by TryLock, the
// first goroutine's, until the model counts want of them or one is
// refused.
func (r *netRun) firstLevels(h int, read bool, want int) {
	r.t.Helper()
	ops, _ := r.side(h, read)
	m := &r.m[h]
	n := &m.w
	if read {
		n = &m.r
	}
	for *n < want {
		if ok, _ := ops.TryLock(r.ctx); !ok {
			return
		}
		*n++
		if !read {
			r.newHold(h)
		}
	}
}
