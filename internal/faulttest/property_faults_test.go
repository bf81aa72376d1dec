package faulttest_test

import (
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

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
