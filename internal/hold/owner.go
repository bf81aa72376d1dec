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
// holds the lock, every other Lock on it waits, whichever goroutine calls
// it, and only a ctx that carries a hold re-enters it. Redis records each
// hold of the handle under a hold id of its own, with one level per mode;
// re-entry depth and a read-write lock's readers are counted here, and
// this file decides, in the process, which calls the levels belong to.
// What a take records, and a read's release counts down, is changed on
// the handle's op, with the scripts (see intent): a read joins the hold's
// read level, or the last reader lets it go, never both at once.
//
// Invariants, guarded by Tracker.mu:
//
//   - The local line (gate) lets one exclusive hold or any number of read
//     holds through at a time, in arrival order; a waiting writer holds
//     back later readers, as in sync.RWMutex. Only calls through the line
//     talk to Redis to take a new hold, so goroutines sharing a handle add
//     no Redis traffic while they wait.
//   - An exclusive hold has a record (x) with its depth: the levels taken
//     through it. A plain hold (Lock with a ctx that carries none) has
//     depth 1 and is released by a plain Unlock from any goroutine; a hold
//     that Do took belongs to the ctx Do gives fn: Lock, TryLock and Do
//     with that ctx re-enter it, Unlock with it leaves one level, and a
//     plain Unlock does not touch it.
//   - Read holds are counted: plain ones (plainReads), and those of RDo,
//     which have records of their own like an exclusive hold's. A read
//     hold taken with a write hold's ctx (a downgrade) is a plain read
//     hold that borrows one of the write hold's units (x.reads) until the
//     write hold ends, and then keeps it.
//   - The line's units follow the holders (I5): an exclusive hold has
//     all of them, a read hold one; a holder gives them back as it
//     leaves (Tracker.leave), whatever Redis says (a lost hold is over
//     too).
//   - The records of a hold live in the Tracker's hold they were taken
//     under (hold.x, plainReads, rdos; see hold for its invariants): a
//     record names its hold, and a release of it is sent for that hold
//     only, never for whatever hold the handle has by the time it runs.
//   - When the handle's hold ends without its holders (the watchdog
//     finds it lost, or ForceUnlock), end forgets them and gives every
//     unit of theirs back as it ends (I5). A call with the ctx of a
//     forgotten hold neither re-enters nor releases anything: it reports
//     ErrNotHeld, and never falls back to a plain hold another goroutine
//     took since; a downgrade whose hold ended while its script ran gives
//     the level Redis granted back, and one whose write record left
//     meanwhile (the hold lives on) owes it, unless another read holds
//     it (see acquired). Plain holds are anonymous, as a
//     sync.Mutex's are: a plain Unlock after such an end releases whatever
//     plain hold the handle has by then.
//   - Local handoff (Kind.LocalHandoff; see handOver): an Unlock of the
//     last level of an exclusive hold, with another goroutine waiting at
//     the gate, may leave the handle's hold in Redis and mark it handed:
//     the next call through the gate takes it as its own without a round
//     trip. A handed hold always has a taker or is released in Redis:
//     whoever leaves the gate without taking it while nobody else waits
//     there releases it (settleHanded), holding the gate meanwhile.

// allUnits is the line's size for a read-write lock: a write hold takes
// every unit, a read hold one.
const allUnits = 1 << 30

// record is one hold taken through the local line: an exclusive hold, or
// a read hold of RDo.
type record struct {
	mode  Mode
	plain bool
	h     *hold // the Tracker's hold it is a part of: its releases and downgrades are sent for it
	depth int64 // levels taken through this record, 0 once it ended; guarded by Tracker.mu
	reads int64 // exclusive: downgraded read holds borrowing its units; guarded by Tracker.mu
}

type ctxKey struct{ l *Lock }

// errEnded is the error of a call whose ctx carries a hold that has ended
// (released, lost, or force-unlocked): it neither re-enters nor releases
// anything, and never falls back to another goroutine's plain hold.
var errEnded = fmt.Errorf("%w: the hold this ctx carries has ended", errs.ErrNotHeld)

// errReentryRefused is the error of a re-entry that Redis refused: the
// hold it would enter is gone from Redis.
var errReentryRefused = fmt.Errorf("%w: the hold this ctx carries is gone from Redis", errs.ErrLost)

// carried returns the hold of l that ctx carries, if any, and whether it
// is still live: not released, and not forgotten by end.
func (l *Lock) carried(ctx context.Context) (*record, bool) {
	r, _ := ctx.Value(ctxKey{l}).(*record)
	if r == nil {
		return nil, false
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	return r, r.depth > 0
}

// take takes a level of mode m: through the hold ctx carries (re-entry,
// or a downgrade), or as a new hold through the local line. It returns
// the record of the hold taken (nil for a plain read hold), whether it
// was taken, and the error; blocking waits, else one attempt is made.
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
	// Taken, so recorded: in the critical section that applied the reply
	// (see intent). A loss or a ForceUnlock from now on finds the record.
	if in.joined {
		// A read that joined the hold's read level sends one renewal, as a
		// re-entry does: it re-arms a fixed lease, and tells a hold gone
		// from Redis at once.
		if err := l.rearmJoined(ctx, in.h, in.r, blocking); err != nil {
			return nil, false, err
		}
	}
	return in.r, true, nil
}

// rearmJoined renews hold h for a read that joined its read level (r: its
// record, nil for a plain read), and counts the read out again when that
// fails: a hold gone from Redis has forgotten it already (end).
func (l *Lock) rearmJoined(ctx context.Context, h *hold, r *record, blocking bool) error {
	try := func(ctx context.Context) (bool, error) { return l.rearm(ctx, h) }
	var err error
	if blocking {
		_, err = wait.Retry(ctx, try)
	} else {
		_, err = try(ctx)
	}
	if err != nil && !errors.Is(err, errReentryRefused) {
		_ = l.release(ctx, h, r, Shared)
	}
	if err == nil && l.t.current() != h {
		return errTakenEnded // lost while the renewal ran: end forgot the read
	}
	return err
}

// errTakenEnded is the error of a read that joined a hold lost or
// force-unlocked before the call returned (see rearmJoined).
var errTakenEnded = fmt.Errorf("%w: the hold ended as it was taken", errs.ErrLost)

// behindOwn returns err, the error of a call that waited for mode m at
// the handle's local line and gave up, saying so when the handle itself
// holds the lock: a second Lock on a handle that holds, with a ctx that
// carries no hold, waits for the Unlock as a second sync.Mutex.Lock
// would; called from the goroutine that holds, only its ctx ends it.
// Goroutines are not told apart (a plain hold is anonymous, as a
// sync.Mutex's is, and another goroutine's Lock must wait), so the call
// waited; the error names the likely mistake and the way to re-enter.
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

// reenter takes a level of mode m through c, the live hold ctx carries.
//
// A re-entry (c's own mode) is counted in the process: Redis holds one
// level per hold, whatever its depth. It sends one renewal of the hold
// (rearm): that re-arms a fixed lease, and tells a hold gone from Redis
// (force-unlocked, or expired before the watchdog noticed) at once. A
// renewal adds no level, so nothing it does can be left behind: a renewal
// whose reply is lost, or that runs after the hold ended, only lengthens
// a lease that then runs out. An Unlock of an inner level sends nothing
// (see releasing).
//
// A read level through a write hold (a downgrade) is taken in Redis: the
// read outlives the write level there.
func (l *Lock) reenter(ctx context.Context, c *record, m Mode, blocking bool) (*record, bool, error) {
	h := c.h // the hold c is a part of; ends only it
	if c.mode == m {
		try := func(ctx context.Context) (bool, error) { return l.rearm(ctx, h) }
		if blocking {
			if _, err := wait.Retry(ctx, try); err != nil {
				return nil, false, err
			}
		} else if _, err := try(ctx); err != nil {
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
	// The downgrade's reply is applied to h only (see Tracker.attempt),
	// and recorded on the handle's op: a plain read hold on the write
	// hold's units, while the write hold lasts.
	in := &intent{m: m, plain: true, down: c}
	try := func(ctx context.Context) (bool, error) {
		ok, err := l.redis(ctx, m, false, in)
		if err != nil || ok {
			return ok, err
		}
		// Not taken: refused, or taken and given back because its reply
		// came after the validity it grants (see Take). Only the hold's
		// renewal tells them apart; a hold still there is not lost.
		if lives, err := l.lives(ctx, h); err != nil || lives {
			return false, cmp.Or(err, errs.ErrStaleReply)
		}
		return false, nil
	}
	var ok bool
	var err error
	if blocking {
		ok, err = wait.Retry(ctx, try)
	} else {
		ok, err = try(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	if !ok {
		l.t.end(h, errReentryRefused)
		return nil, false, errReentryRefused
	}
	if in.h == nil {
		// The write record left while the script ran: the read level it
		// took is another read's, or owed (see acquired).
		return nil, false, errEnded
	}
	return nil, true, nil
}

// rearm renews hold h for a re-entry: it reports true when Redis still
// has h, and otherwise ends h as lost and returns errReentryRefused.
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

// lives renews hold h, still current, and reports whether Redis still
// has it. A hold of a fixed lease is not renewed: it reports false.
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

// redis takes a level of mode m in Redis, waiting or in one attempt, and
// records it through in.
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
	// r leaves on the handle's op, with the joins: the last holder of the
	// level releases it in Redis, the others only count down (see
	// Tracker.leave).
	return l.Wrap(l.ops[m][1], l.release(ctx, h, r, m))
}

// The bounds of passing within a handle (see handOver): a hold taken in Redis
// passes between goroutines of the handle at most maxPasses times in a
// row, and after the first pass only within maxPassTime of being taken,
// before a release in Redis hands the lock to the first waiter in the
// Redis line. A waiter there waits for at most maxPasses+1 critical
// sections of the handle, and for at most two when they are longer than
// maxPassTime, however many goroutines wait on the handle.
// Within those bounds short critical sections pass without a round trip:
// in the bench module's workers scenario (1 ms sections) that is the
// difference between about 83% (3 passes, no time bound) and 87% of the
// serial limit.
const (
	maxPasses   = 7
	maxPassTime = 10 * time.Millisecond
)

// handOver decides whether the Unlock of a level of r, an exclusive hold,
// hands the handle's hold to the next call through the
// gate instead of releasing it in Redis, and if so marks it handed. It
// does for the last level of a hold when another call waits at the gate,
// the kind allows it (a fencing token or a fixed lease needs Redis: the
// next hold must get its own), the hold is still current and within the
// limits. The next holder then holds the lock without a round trip and
// the processes waiting in Redis wait a little longer: maxPasses bounds
// it. r leaves in the same critical section, and gives its units of the
// line back: the handed mark holds the level now (nothing is sent).
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

// takeHanded takes the hold that the previous holder handed over (see
// handOver), if any, for a call that passed the gate with n units: in one
// critical section with the record, and only while that hold is still
// the Tracker's current one (a loss or ForceUnlock ends it). A caller whose ctx has ended leaves it to the next call
// and returns ctx's error, having given its units back. It reports false
// and no error when there is nothing to take: the caller goes to Redis.
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

// Queued returns how many calls wait at the handle's local line for an
// exclusive hold: for tests.
func (l *Lock) Queued() int {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	return l.queued
}

// settleHanded releases a handed hold in Redis when nobody waits at the
// gate to take it. It holds the gate while it does, so that no call takes
// the hold meanwhile; when the gate is taken, the call that holds it is
// past the gate and takes the handed hold itself. The release runs on
// ReleaseContext(ctx), and is waited for until ctx is done: a Lock whose
// ctx ended leaves it to the background (perclient.TidyUp).
func (l *Lock) settleHanded(ctx context.Context) {
	l.t.mu.Lock()
	idle := l.t.cur != nil && l.t.cur.handed && l.queued == 0
	l.t.mu.Unlock()
	if !idle || !l.t.gate.TryAcquire(l.t.units) {
		return
	}
	// Read once the gate is held: no call can take the handed hold now,
	// so the handed mark is there until the release counts it out, on op
	// (see Tracker.leave), unless the hold ends first.
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

// releasing finds what an Unlock of mode m with ctx releases a level of:
// the hold ctx carries in that mode, else the plain write hold, else (r
// nil) a plain read hold; and the hold h it is a part of. A re-entered
// level (see reenter) is taken off in the process only, in the same
// critical section, and h is nil: Redis holds one level, whatever the
// depth. A hold of Do's that has ended is done with: errEnded, and
// nothing is sent, never another goroutine's plain hold.
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

// reads reports whether the handle holds a read lock in h (nil: none);
// the caller holds Tracker.mu.
func (h *hold) reads() bool { return h != nil && (h.plainReads > 0 || len(h.rdos) > 0) }

// Do takes a level of mode m (re-entering the hold ctx carries, if any),
// runs fn with a ctx that carries the hold and is cancelled when it ends
// (lost, or force-unlocked), and releases the level, even when ctx has
// ended (see ReleaseContext). It returns the error of the take, else that
// of fn, else that of the release.
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
	err = fn(fctx)
	if uerr := l.Unlock(fctx, m); err == nil {
		err = uerr
	}
	return err
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
