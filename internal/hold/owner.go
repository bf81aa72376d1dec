package hold

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/wait"
	"github.com/redisync/redisync/internal/watchdog"
)

// Ownership, the Go way. A handle is shared like a sync.Mutex: while it
// holds the lock every other Lock on it waits, and only a ctx that carries
// a hold re-enters it. This file decides which calls in the process the
// levels in Redis belong to. Under Tracker.mu:
//
//   - The local line (gate) lets one exclusive hold or any number of read
//     holds through, in arrival order; a waiting writer holds back later
//     readers, as in sync.RWMutex. Only calls through it talk to Redis.
//   - An exclusive hold has a record (x) counting its depth. A plain one
//     (Lock with a ctx carrying none) is anonymous, as a sync.Mutex's: any
//     plain Unlock releases it. One Do took belongs to the ctx Do gives fn,
//     with which Lock, TryLock and Do re-enter it and Unlock leaves a level.
//   - Read holds are counted (plainReads) or, for RDo, recorded (rdos). A
//     read taken with a write hold's ctx (a downgrade) is a plain read that
//     borrows a unit of the write hold's (x.reads) until that ends, then
//     keeps it.
//   - A record names its hold, and its release is for that hold only: once
//     the hold ends (lost, ForceUnlock), a ctx carrying it gets errEnded,
//     never a plain hold another goroutine took since.

// allUnits is a read-write lock's line: a write hold takes every unit.
const allUnits = 1 << 30

// record is one hold taken through the local line: an exclusive hold, or an
// RDo read.
type record struct {
	mode  Mode
	plain bool
	h     *hold // the hold it is part of: its releases and downgrades are sent for it
	depth int64 // levels taken through it, 0 once it ended; under Tracker.mu
	reads int64 // exclusive: downgraded reads borrowing its units; under Tracker.mu
}

type ctxKey struct{ l *Lock }

// errEnded is the error of a call whose ctx carries a hold that has ended.
var errEnded = fmt.Errorf("%w: the hold this ctx carries has ended", errs.ErrNotHeld)

// errReentryRefused is the error of a re-entry of a hold gone from Redis.
var errReentryRefused = fmt.Errorf("%w: the hold this ctx carries is gone from Redis", errs.ErrLost)

// carried returns the hold ctx carries, if any, and whether it is live.
func (l *Lock) carried(ctx context.Context) (*record, bool) {
	r, _ := ctx.Value(ctxKey{l}).(*record)
	if r == nil {
		return nil, false
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	return r, r.depth > 0
}

// take takes a level of mode m: through the hold ctx carries, or as a new
// hold through the local line. It returns the record taken (nil for a plain
// read) and whether it was taken.
func (l *Lock) take(ctx context.Context, m Mode, blocking, plain bool) (*record, bool, error) {
	if c, live := l.carried(ctx); c != nil {
		switch {
		case !live:
			return nil, false, errEnded
		case c.mode == Shared && m == Exclusive:
			return nil, false, errs.ErrUpgradeNotSupported
		}
		return l.reenter(ctx, c, m, blocking)
	}
	n := int64(1) // units of the local line: a write hold has them all
	if m == Exclusive {
		n = l.t.units
	}
	if !blocking {
		if !l.t.gate.TryAcquire(n) {
			return nil, false, nil // another goroutine of the handle holds it
		}
	} else if err := l.enter(ctx, m, n); err != nil {
		return nil, false, l.behindOwn(m, err)
	}
	if m == Exclusive {
		if r, taken, err := l.takeHanded(ctx, plain, n); taken || err != nil {
			return r, taken, err
		}
	}
	in := &intent{m: m, plain: plain}
	ok, err := l.redis(ctx, m, blocking, in)
	if !ok || err != nil {
		l.t.gate.Release(n)
		return nil, ok, err
	}
	if in.joined {
		// A joined read renews the hold once, as a re-entry does.
		if err := l.rearmJoined(ctx, in.h, in.r, blocking); err != nil {
			return nil, false, err
		}
	}
	return in.r, true, nil
}

// rearmJoined renews h for a read that joined its read level, and counts
// the read out again if that fails (a hold gone has forgotten it: end).
func (l *Lock) rearmJoined(ctx context.Context, h *hold, r *record, blocking bool) error {
	_, err := retryIf(ctx, blocking, l.rearmer(h))
	if err != nil && !errors.Is(err, errReentryRefused) {
		_ = l.release(ctx, h, r, Shared)
	}
	if err == nil && l.t.current() != h {
		return errTakenEnded // lost while the renewal ran: end forgot the read
	}
	return err
}

var errTakenEnded = fmt.Errorf("%w: the hold ended as it was taken", errs.ErrLost)

// behindOwn adds a hint to err, the error of a call that gave up at the
// local line, when the handle itself holds the lock: a plain Lock waits for
// its Unlock as sync.Mutex.Lock would.
func (l *Lock) behindOwn(m Mode, err error) error {
	l.t.mu.Lock()
	h := l.t.cur
	write, reads := h != nil && h.x != nil, h.reads()
	l.t.mu.Unlock()
	var hint string
	switch {
	case write && m == Exclusive:
		hint = "this handle holds the lock: a call whose ctx carries no hold waits for its Unlock, " +
			"as a second sync.Mutex.Lock does; to re-enter, lock with the ctx that Do passes to fn"
	case write:
		hint = "this handle holds the write lock: an RLock whose ctx carries no hold waits for its Unlock; " +
			"to downgrade, call RLock with the ctx that Do passes to fn"
	case reads && m == Exclusive:
		hint = "this handle holds a read lock: a Lock waits for its RUnlock (a read hold cannot be upgraded)"
	case reads:
		hint = "this handle holds a read lock, and a Lock of the handle waits for it: " +
			"a new RLock waits behind that Lock, as with sync.RWMutex"
	default:
		return err
	}
	return fmt.Errorf("%w: %s", err, hint)
}

// reenter takes a level of mode m through c, the live hold ctx carries. A
// re-entry is counted in the process and sends one renewal (rearm), which
// re-arms a fixed lease and tells a hold gone from Redis; it adds no level,
// so a late or lost one only lengthens a lease. A downgrade takes the read
// level in Redis, where it outlives the write level.
func (l *Lock) reenter(ctx context.Context, c *record, m Mode, blocking bool) (*record, bool, error) {
	h := c.h
	if c.mode == m {
		if _, err := retryIf(ctx, blocking, l.rearmer(h)); err != nil {
			return nil, false, err
		}
		l.t.mu.Lock()
		defer l.t.mu.Unlock()
		if c.depth == 0 {
			return nil, false, errEnded // lost while the renewal ran
		}
		c.depth++
		return c, true, nil
	}
	in := &intent{m: m, plain: true, down: c}
	try := func(ctx context.Context) (bool, error) {
		ok, err := l.redis(ctx, m, false, in)
		if err != nil || ok {
			return ok, err
		}
		// Refused, or given back as stale (Take): a renewal tells which.
		if lives, err := l.lives(ctx, h); err != nil || lives {
			return false, cmp.Or(err, errs.ErrStaleReply)
		}
		return false, nil
	}
	ok, err := retryIf(ctx, blocking, try)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		l.t.end(h, errReentryRefused)
		return nil, false, errReentryRefused
	}
	if in.h == nil {
		// The write record left meanwhile: the level is another read's, or owed.
		return nil, false, errEnded
	}
	return nil, true, nil
}

// retryIf runs try, through wait.Retry if blocking.
func retryIf(ctx context.Context, blocking bool, try func(ctx context.Context) (bool, error)) (bool, error) {
	if blocking {
		return wait.Retry(ctx, try)
	}
	return try(ctx)
}

func (l *Lock) rearmer(h *hold) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) { return l.rearm(ctx, h) }
}

// rearm renews h for a re-entry; when Redis no longer has h, it ends h as
// lost and returns errReentryRefused.
func (l *Lock) rearm(ctx context.Context, h *hold) (bool, error) {
	if h == nil || l.k.Renew == nil {
		return false, errReentryRefused
	}
	sent := time.Now()
	held, err := l.k.Renew(ctx, l.k.RDB, h.id)()
	if errors.Is(err, watchdog.ErrGone) {
		held, err = false, nil // gone, and taken over
	}
	if err != nil {
		return false, err
	}
	if !held {
		l.t.end(h, errReentryRefused)
		return false, errReentryRefused
	}
	h.wd.Touch(sent)
	return true, nil
}

// lives renews h, if current, and reports whether Redis has it; false for
// a fixed lease, which is not renewed.
func (l *Lock) lives(ctx context.Context, h *hold) (bool, error) {
	if h == nil || l.t.cfg.Renew == nil || l.t.current() != h {
		return false, nil
	}
	held, err := l.t.cfg.Renew(ctx, l.k.RDB, h.id)()
	if errors.Is(err, watchdog.ErrGone) {
		return false, nil // gone, and taken over
	}
	return held, err
}

// redis takes a level in Redis, waiting or in one attempt.
func (l *Lock) redis(ctx context.Context, m Mode, blocking bool, in *intent) (bool, error) {
	if blocking {
		err := l.wait(ctx, m, in)
		return err == nil, err
	}
	return l.try(ctx, m, in)
}

// Lock takes a level of mode m, waiting until it can or ctx is done.
func (l *Lock) Lock(ctx context.Context, m Mode) error {
	actx, r := l.probes[m].Begin(ctx, true)
	_, _, err := l.take(actx, m, true, true)
	err = errs.CtxErr(ctx, err)
	r.End(ctx, err == nil, err)
	return l.Wrap(l.ops[m][0], err)
}

// TryLock makes one attempt to take a level of mode m.
func (l *Lock) TryLock(ctx context.Context, m Mode) (bool, error) {
	actx, r := l.probes[m].Begin(ctx, false)
	_, ok, err := l.take(actx, m, false, true)
	err = errs.CtxErr(ctx, err)
	r.End(ctx, ok, err)
	return ok, l.Wrap(l.ops[m][0], err)
}

// Unlock releases one level of mode m: of the hold ctx carries, else of a
// plain hold. It runs on ReleaseContext(ctx).
func (l *Lock) Unlock(ctx context.Context, m Mode) error {
	r, h, err := l.releasing(ctx, m)
	switch {
	case err != nil || h == nil:
		return l.Wrap(l.ops[m][1], err) // h nil: a re-entered level, counted in the process only
	case l.handOver(r, m):
		l.settleHanded(context.WithoutCancel(ctx)) // a release: waited for
		return nil
	}
	return l.Wrap(l.ops[m][1], l.release(ctx, h, r, m))
}

// A hold passes between the handle's goroutines (handOver) at most
// maxPasses times in a row, after the first only within maxPassTime of its
// start: a waiter in Redis waits for at most maxPasses+1 of the handle's
// critical sections, or two long ones. bench's workers scenario (1 ms
// sections): 87% of the serial limit, against 83% with 3 passes, no bound.
const (
	maxPasses   = 7
	maxPassTime = 10 * time.Millisecond
)

// handOver marks the hold handed instead of releasing it, for the Unlock of
// r's last exclusive level while another call waits at the gate, within the
// bounds; r leaves and gives its units back in the same critical section.
func (l *Lock) handOver(r *record, m Mode) bool {
	if !l.k.LocalHandoff || m != Exclusive || r == nil {
		return false
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	h := l.t.cur
	if h == nil || r.h != h || r != h.x || r.depth != 1 || r.reads != 0 || l.queued == 0 || h.handed ||
		h.passes >= maxPasses || h.passes > 0 && time.Since(h.since) >= maxPassTime {
		return false
	}
	h.handed = true
	h.passes++
	_, units, _ := l.t.leave(h, r, m)
	l.t.give(units)
	return true
}

// takeHanded takes the handed hold, if any, for a call that passed the gate
// with n units; with ctx ended it leaves it to settleHanded instead. It
// reports false and no error when there is nothing to take.
func (l *Lock) takeHanded(ctx context.Context, plain bool, n int64) (*record, bool, error) {
	l.t.mu.Lock()
	h := l.t.cur
	switch {
	case h == nil || !h.handed:
		l.t.mu.Unlock()
		return nil, false, nil
	case ctx.Err() != nil:
		l.t.mu.Unlock()
		l.t.gate.Release(n)
		l.settleHanded(ctx)
		return nil, false, ctx.Err()
	}
	h.handed = false
	r := &record{mode: Exclusive, plain: plain, depth: 1, h: h}
	h.x = r
	l.t.mu.Unlock()
	return r, true, nil
}

// Queued returns how many calls wait at the gate for an exclusive hold.
func (l *Lock) Queued() int {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	return l.queued
}

// settleHanded releases a handed hold in Redis when nobody waits at the gate
// to take it, holding the gate meanwhile; a gate held already is by a call
// that takes the hold itself (I6).
func (l *Lock) settleHanded(ctx context.Context) {
	l.t.mu.Lock()
	idle := l.t.cur != nil && l.t.cur.handed && l.queued == 0
	l.t.mu.Unlock()
	if !idle || !l.t.gate.TryAcquire(l.t.units) {
		return
	}
	// The gate held, the handed mark stays until the release counts it out.
	h := l.t.current()
	if h == nil {
		l.t.gate.Release(l.t.units)
		return
	}
	perclient.TidyUp(ctx, l.k.RDB, ReleaseTimeout, func(ctx context.Context) {
		_ = l.t.releaseHold(ctx, h, nil, Exclusive)
		l.t.gate.Release(l.t.units)
	})
}

// releasing finds what an Unlock of mode m with ctx releases: the hold ctx
// carries in m, else the plain write hold, else (r nil) a plain read; and its
// hold h. A re-entered level is taken off in the process only (h nil). A
// carried hold that ended gets errEnded, never another's plain hold.
func (l *Lock) releasing(ctx context.Context, m Mode) (*record, *hold, error) {
	c, _ := ctx.Value(ctxKey{l}).(*record)
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	cur := l.t.cur
	switch {
	case c != nil && c.mode == m && c.depth == 0:
		return nil, nil, errEnded
	case c != nil && c.mode == m && c.depth > 1:
		c.depth--
		return nil, nil, nil
	case c != nil && c.mode == m:
		return c, c.h, nil
	case cur != nil && m == Exclusive && cur.x != nil && cur.x.plain:
		return cur.x, cur, nil
	case cur != nil && m == Shared && cur.plainReads > 0:
		return nil, cur, nil
	case m == Exclusive && cur.reads():
		return nil, nil, fmt.Errorf("%w: the handle holds a read lock: release it with RUnlock", errs.ErrNotHeld)
	}
	return nil, nil, errs.ErrNotHeld
}

func (h *hold) reads() bool { return h != nil && (h.plainReads > 0 || len(h.rdos) > 0) }

// Do takes a level of mode m, runs fn with a ctx that carries the hold and
// is cancelled when it ends, and releases the level, even when ctx has
// ended. It returns the error of the take, else of fn, else of the release.
func (l *Lock) Do(ctx context.Context, m Mode, fn func(ctx context.Context) error) error {
	// fn runs on ctx, not actx: its spans are not the acquire's.
	actx, report := l.probes[m].Begin(ctx, true)
	r, _, err := l.take(actx, m, true, false)
	err = errs.CtxErr(ctx, err)
	report.End(ctx, err == nil, err)
	if err != nil {
		return l.Wrap(l.ops[m][0], err)
	}
	fctx := ctx
	if r != nil {
		fctx = context.WithValue(ctx, ctxKey{l}, r)
	}
	fctx, cancel := context.WithCancel(fctx)
	defer cancel()
	h := l.t.current() // a downgrade's: its read is a plain one, without a record
	if r != nil {
		h = r.h
	}
	defer l.t.onEnd(h, cancel)()
	return cmp.Or(fn(fctx), l.Unlock(fctx, m)) // both run, fn first
}

// HoldCount returns the depth of the hold that ctx carries, in its mode;
// without one, 1 when the handle has a plain exclusive hold, else 0.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	c, _ := ctx.Value(ctxKey{l}).(*record)
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	switch h := l.t.cur; {
	case c != nil:
		return int(c.depth), nil // 0 once its hold ended
	case h != nil && h.x != nil && h.x.plain:
		return 1, nil
	}
	return 0, nil
}
