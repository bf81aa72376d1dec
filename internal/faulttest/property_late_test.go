package faulttest_test

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// lateScripts names each kind's acquire scripts, write and read, which
// the late step holds back.
var lateScripts = map[string][2]string{
	"rlock":    {"rlock_acquire.lua", ""},
	"fairlock": {"fairlock_acquire.lua", ""},
	"rwlock":   {"rwlock_writelock.lua", "rwlock_readlock.lua"},
}

// netWait is a Lock running in the background.
type netWait struct {
	h      int
	res    chan error
	cancel context.CancelFunc
}

func (r *netRun) wait(h int, read bool) *netWait {
	ops, _ := r.side(h, read)
	ctx, cancel := context.WithTimeout(r.ctx, 4*netLease)
	w := &netWait{h: h, res: make(chan error, 1), cancel: cancel}
	go func() { w.res <- ops.Lock(ctx) }()
	return w
}

// late plays opLate: handle s.H's Lock (RLock) whose attempt the proxy
// holds until the Lock gave up; then its next wait, in line behind a
// holder (handle 2 takes the lock first when the model counts no hold
// that excludes the mode) and, for an rlock or a fair lock, ahead of
// another handle's wait; then the held copy arrives, late but before its
// deadline, and the holders the model counts release. The wait first in
// line gets the lock first (e): a release grants the first in line, and
// a late copy of a given-up attempt changes nothing.
func (r *netRun) late(s netStep) {
	r.t.Helper()
	h, read := s.H, s.Read && r.hs[s.H].read != nil
	if !onA(h) || r.m[h].levels() > 0 {
		return
	}
	mode := 0
	if read {
		mode = 1
	}
	stands, noisy := r.standing()
	exact := !noisy && len(stands) == 0 && !read && r.kind.name != "rwlock"
	if !r.taken(h, read) && r.m[2].levels() == 0 {
		r.firstLevels(2, false, 1)
	}
	held := r.proxy.Hold(r.attempts[mode])
	ops, _ := r.side(h, read)
	gctx, cancel := context.WithTimeout(r.ctx, 300*time.Millisecond)
	err := ops.Lock(gctx)
	cancel()
	if err == nil || !isClosed(held.Caught()) {
		r.t.Fatalf("the late step's attempt was not held (Lock: %v): the fault was not injected", err)
	}
	r.noise(h) // the given-up attempt, its give-backs and its late copy
	queue := keyspace.NewNames(r.name).Queue()
	inLine := func(n int64) bool { return r.b.LLen(r.ctx, queue).Val() == n }
	first := r.wait(h, read)
	waits := []*netWait{first}
	exact = exact && waitUntil(time.Second, func() bool { return inLine(1) }) && r.taken(h, read)
	if exact {
		for _, b := range []int{2, 1 - h} {
			if b != h && r.m[b].levels() == 0 {
				waits = append(waits, r.wait(b, false))
				break
			}
		}
		exact = len(waits) == 2 && waitUntil(time.Second, func() bool { return inLine(2) })
	} else {
		time.Sleep(100 * time.Millisecond) // in line, or holding
	}
	dctx, dcancel := context.WithTimeout(r.ctx, 2*time.Second)
	reply, err := held.Deliver(dctx)
	dcancel()
	r.t.Logf("late copy of handle %d's given-up attempt: %q %v", h, reply, err)
	r.releaseAllBut(h)
	r.settleWaits(waits, exact, read)
}

// releaseAllBut releases every plain level the model counts of every
// handle but h, as their callers would.
func (r *netRun) releaseAllBut(h int) {
	for o := range r.hs {
		if o == h {
			continue
		}
		for r.m[o].w > 0 {
			r.release(netStep{Op: opUnlock, H: o})
		}
		for r.m[o].r > 0 {
			r.release(netStep{Op: opUnlock, H: o, Read: true})
		}
	}
}

// settleWaits waits for the first of waits to get the lock, checks that
// it is the first in line when exact is set, ends the others and counts
// whatever each got.
func (r *netRun) settleWaits(waits []*netWait, exact, read bool) {
	r.t.Helper()
	won := -1
	deadline := time.Now().Add(4 * netLease)
	for won < 0 && time.Now().Before(deadline) {
		for i, w := range waits {
			select {
			case err := <-w.res:
				w.res <- err
				if err == nil && won < 0 {
					won = i
				}
			default:
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	switch {
	case exact && won > 0:
		r.fail("e-order", "(e) handle %d's wait, behind handle %d's in line, got the lock first, after a late copy of handle %d's given-up attempt arrived",
			waits[won].h, waits[0].h, waits[0].h)
	case exact && won < 0:
		r.fail("e-order", "(e) no wait in line got the lock within %v of the holders' release, after a late copy of handle %d's given-up attempt arrived",
			4*netLease, waits[0].h)
	}
	for i, w := range waits {
		if i != won {
			w.cancel()
		}
		err := <-w.res
		w.cancel()
		if err != nil {
			r.noise(w.h) // a wait given up: a place or a grant may stay a while
			continue
		}
		if read {
			r.m[w.h].r++
		} else {
			r.m[w.h].w++
			r.newHold(w.h)
		}
	}
}
