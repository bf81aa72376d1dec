package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

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

// outlive stalls the proxy until every hold of client A has ended and, if
// client B holds nothing, run out in Redis too; then the stalled commands
// (renewals among them) arrive late.
func (r *netRun) outlive() {
	r.t.Helper()
	holders := r.holdersOnA()
	if len(holders) == 0 {
		return
	}
	r.proxy.Stall()
	defer r.proxy.Resume()
	r.closedWithin(holders, 3*netLease, "the proxy stalled")
	if r.m[2].levels() == 0 {
		lock := keyspace.NewNames(r.name).Lock()
		waitUntil(netLease+netSlack, func() bool { return r.b.Exists(r.ctx, lock).Val() == 0 })
	}
	r.lost(holders...)
	r.noise(0, 1)
}

// force plays handle h's ForceUnlock: when it deleted the lock, every
// hold ends, and each Done closes once the watchdog notices (d).
func (r *netRun) force(h int) {
	r.t.Helper()
	deleted, err := r.hs[h].ForceUnlock(r.ctx)
	var holders []int
	for i := range r.m {
		if r.m[i].levels() > 0 {
			holders = append(holders, i)
			r.m[i].mayLose = true
		}
	}
	if err == nil && deleted {
		r.closedWithin(holders, netLease+netSlack, "ForceUnlock deleted the lock")
		r.lost(holders...)
	}
}

// noise records that a fault may have left something of handles hs in
// Redis that the model does not count (a level whose release failed, a
// place in line, a grant, a renewal run late): for netFree past now or
// past the last give-up's stand, whichever is later.
func (r *netRun) noise(hs ...int) {
	until := time.Now()
	if r.settled.After(until) {
		until = r.settled
	}
	until = until.Add(netFree)
	for _, h := range hs {
		if until.After(r.noisy[h]) {
			r.noisy[h] = until
		}
	}
}

// standing returns the handles whose given-up hold may still stand in
// Redis, and whether anything else a fault left may stand (noise, or a
// lost reply armed and not yet dropped: once dropped, it is noise from
// now on).
func (r *netRun) standing() (stands []int, noisy bool) {
	if r.drop != nil && isClosed(r.drop) {
		r.noise(0, 1)
		r.drop = nil
	}
	now := time.Now()
	noisy = r.drop != nil
	for h := range r.hs {
		noisy = noisy || now.Before(r.noisy[h])
		if now.Before(r.stands[h]) {
			stands = append(stands, h)
		}
	}
	return stands, noisy
}

// ownFirst checks (e) before a probe of mode read (the write side when
// not read): when nothing may stand in Redis but what the model counts
// and one handle's hold given up, that handle, holding nothing, is not
// refused the mode by its own old hold: the release it owes is sent
// before its next attempt.
func (r *netRun) ownFirst(read bool) {
	r.t.Helper()
	stands, noisy := r.standing()
	if noisy || len(stands) != 1 || r.m[stands[0]].levels() > 0 {
		return
	}
	h := stands[0]
	ops, _ := r.side(h, read)
	if ok, err := ops.TryLock(r.ctx); !ok {
		r.fail("e-own", "(e) handle %d's TryLock (read: %v) was refused (%v), though nothing but its own given-up hold, whose release it owes, may stand; lock hash %v",
			h, read, err, r.b.HGetAll(r.ctx, keyspace.NewNames(r.name).Lock()).Val())
		return
	}
	r.stands[h] = time.Time{}
	if !read {
		r.newHold(h)
	}
	_ = ops.Unlock(r.ctx)
}
