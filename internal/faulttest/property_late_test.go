package faulttest_test

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// lateScripts names each kind's acquire scripts, write and read, which
// the late step holds back, and lateReleases its release scripts, which
// the lateUnlock step holds back.
var (
	lateScripts = map[string][2]string{
		"rlock":    {"rlock_acquire.lua", ""},
		"fairlock": {"fairlock_acquire.lua", ""},
		"rwlock":   {"rwlock_writelock.lua", "rwlock_readlock.lua"},
	}
	lateReleases = map[string][2]string{
		"rlock":    {"rlock_unlock.lua", ""},
		"fairlock": {"fairlock_unlock.lua", ""},
		"rwlock":   {"rwlock_writeunlock.lua", "rwlock_readunlock.lua"},
	}
)

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
	r.deliver(held, "handle %d's given-up attempt", h)
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

// lateUnlock plays opLateUnlock: handle s.H's Unlock (RUnlock) of the
// only level it holds, whose release the proxy holds and whose connection
// it then cuts; then the handle takes the mode again (the release it owes
// goes first), handle 2 waits for the lock behind it, and the held copy
// arrives late. A release is for its own hold, by hold id (and a read
// level's tag): the copy must change nothing, so the handle holds on and
// the wait gets the lock only from the handle's own release.
func (r *netRun) lateUnlock(s netStep) {
	r.t.Helper()
	h, m := s.H, &r.m[s.H]
	ops, read := r.side(h, s.Read)
	n, mode := &m.w, 0
	if read {
		n, mode = &m.r, 1
	}
	if !onA(h) || m.mayLose || *n != 1 || m.levels() != 1 || r.releases[mode] == nil {
		return
	}
	held, err := r.heldRelease(r.ctx, mode, ops.Unlock)
	*n = 0
	if err != nil {
		m.mayLose = true // the last level's release failed: the hold ends
	}
	r.check("after the held release")
	if r.taken(h, read) {
		return
	}
	lctx, lcancel := context.WithTimeout(r.ctx, 2*netLease)
	err = ops.Lock(lctx)
	lcancel()
	if err != nil {
		r.fail("late-unlock-relock", "handle %d could not take the mode (read: %v) again after its release was held back: %v", h, read, err)
		return
	}
	*n, m.mayLose = 1, false
	if !read {
		r.newHold(h)
	}
	var waits []*netWait
	if r.m[2].levels() == 0 {
		waits = append(waits, r.wait(2, false))
		names := keyspace.NewNames(r.name)
		waitUntil(time.Second, func() bool { // in line: a mutex's list, a read-write lock's writers
			return r.b.LLen(r.ctx, names.Queue()).Val()+r.b.ZCard(r.ctx, names.Writers()).Val() > 0
		})
	}
	reply := r.deliver(held, "handle %d's release", h)
	for _, w := range waits {
		select {
		case err := <-w.res:
			w.res <- err
			if err == nil && !isClosed(r.hs[h].Done()) {
				r.fail("late-unlock", "a late copy of handle %d's release (%q) let handle 2 take the lock while handle %d holds it again", h, reply, h)
			}
		case <-time.After(netLease / 2):
		}
	}
	r.check("after the late copy of a release")
	r.release(netStep{Op: opUnlock, H: h, Read: read})
	r.settleWaits(waits, false, false)
}

// lateReadUnderWrite plays opLateUnlock in a write Do's fn (ctx: the one
// Do gives): handle h's RUnlock of the read level a downgrade took, held
// and cut as in lateUnlock; then a downgrade again, and the held copy
// arrives late. A read level is tagged with the attempt that took it, so
// the copy must leave the new one standing under the write hold.
func (r *netRun) lateReadUnderWrite(ctx context.Context, h int) {
	r.t.Helper()
	m, rw := &r.m[h], r.hs[h].rw
	if !onA(h) || m.mayLose || m.r != 1 || r.releases[1] == nil || rw == nil {
		return
	}
	held, _ := r.heldRelease(ctx, 1, rw.RUnlock)
	m.r = 0
	if rw.RLock(ctx) != nil {
		return
	}
	m.r = 1
	reply := r.deliver(held, "handle %d's read release under its write hold", h)
	fields := r.b.HKeys(r.ctx, keyspace.NewNames(r.name).Lock()).Val()
	if !slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "r:") }) {
		r.fail("late-read-release", "a late copy of handle %d's read release (%q) removed the read level its downgrade took again: lock fields %v", h, reply, fields)
	}
}

// heldRelease runs release (an Unlock or RUnlock of mode, 1 for read) on
// ctx while the proxy holds its script, and cuts client A's connections
// once the script is held: the release fails at once, as on a broken
// connection, and the server has not seen it. The held copy is returned,
// to arrive late (deliver).
func (r *netRun) heldRelease(ctx context.Context, mode int, release func(context.Context) error) (*redistest.Held, error) {
	r.t.Helper()
	held := r.proxy.Hold(r.releases[mode])
	res := make(chan error, 1)
	go func() { res <- release(ctx) }()
	select {
	case <-held.Caught():
		r.mayLose()
		r.proxy.Cut()
	case err := <-res:
		r.t.Fatalf("the release was not held (it returned %v): the fault was not injected", err)
	}
	r.noise(0, 1) // the release owed, renewals cut, and the late copy
	return held, <-res
}

// deliver sends a held copy to the server and logs its reply.
func (r *netRun) deliver(held *redistest.Held, what string, args ...any) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
	defer cancel()
	reply, err := held.Deliver(ctx)
	r.t.Logf("late copy of "+what+": %q %v", append(args, reply, err)...)
	return reply
}
