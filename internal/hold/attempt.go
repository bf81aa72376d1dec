package hold

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/exactly"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/watchdog"
)

// Grant is what an acquire script reports.
type Grant struct {
	OK     bool          // the handle holds the lock now
	Levels Levels        // when OK: the handle's levels in Redis
	Token  uint64        // when OK: the hold's fencing token, else 0
	Wait   time.Duration // when not OK: the holder's remaining lease; 0 if unknown
	// Refused, when not OK, is a definite refusal that ends the attempt
	// with this error; nothing was taken (a read-write lock's upgrade).
	Refused error
}

// Granted converts the reply of a one-mode acquire script.
func Granted(a script.Acquired) Grant {
	return Grant{OK: a.OK, Levels: Levels{Exclusive: a.Holds}, Token: a.Token, Wait: a.Wait}
}

// Take makes one acquisition attempt with try, under the rules every
// primitive shares, and reports the grant and when its script was sent:
//
//   - An attempt whose outcome is unknown (its reply was lost, or ctx cut
//     the wait for it short) is given back before its error is returned:
//     undo gets nil. An attempt that failed without reaching Redis (no
//     connection) or with an error reply took nothing, and is not given
//     back, whether or not ctx has ended.
//   - A grant whose reply is read after ctx ended is given back, and
//     ctx's error returned: the caller has moved on, and a nil error from
//     a call whose ctx is done would hold a lock nobody will release.
//   - A grant that arrives after the validity its lease gives it (see
//     watchdog.Stale) is given back and reported as not granted, so that
//     the caller tries again: its lease may be over on the server and the
//     lock someone else's. A lease of 0 (permits without one) skips this.
//
// undo gets ctx: it must return once ctx is done, leaving what it could
// not finish to the background, bounded (see Tracker.Undo and
// perclient.TidyUp), so that a caller returns on time.
func Take(ctx context.Context, lease time.Duration, try func(ctx context.Context) (Grant, error), undo func(ctx context.Context, g *Grant)) (Grant, time.Time, error) {
	sent := time.Now()
	g, err := try(ctx)
	switch {
	case err != nil:
		if errs.OutcomeUnknown(err) {
			undo(perclient.AfterInFlight(ctx, err), nil)
		}
		return Grant{}, sent, errs.CtxErr(ctx, err)
	case !g.OK:
		return g, sent, nil
	case ctx.Err() != nil:
		undoGranted(ctx, undo, g)
		return Grant{}, sent, ctx.Err()
	case lease > 0 && watchdog.Stale(sent, lease):
		undoGranted(ctx, undo, g)
		return Grant{}, sent, nil
	}
	return g, sent, nil
}

// undoGranted runs Take's undo for g, a grant. It takes the address of a
// copy: g, were its own address taken in Take, would be moved to the heap
// on every call, not only on these rare paths.
func undoGranted(ctx context.Context, undo func(ctx context.Context, g *Grant), g Grant) {
	undo(ctx, &g)
}

// Try runs an acquire script once for hold id: the current hold's (a
// read-write lock's level in the mode the hold lacks), or that of the
// handle's wait for a new hold (see Tracker.waitID): every attempt of one
// wait names the same id, until something is given back under it. seq is
// the attempt's number (Asking.Seq), higher than any earlier attempt's of
// the handle.
type Try func(ctx context.Context, id string, seq uint64) (Grant, error)

// Attempt makes one acquisition attempt of mode m with try, serialized
// with the handle's other scripts, under the rules of Take, and records
// its outcome. It has the shape of wait.Attempt: whether it succeeded
// and, if not, how long the holder's lease still runs.
func (t *Tracker) Attempt(ctx context.Context, m Mode, try Try) (bool, time.Duration, error) {
	return t.attempt(ctx, m, try, nil)
}

// attempt is Attempt for a take of the local line, which records in the
// hold the level it takes or joins (see intent); nil records nothing.
func (t *Tracker) attempt(ctx context.Context, m Mode, try Try, in *intent) (bool, time.Duration, error) {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return false, 0, err
	}
	defer t.op.Release(1)
	if err := t.repay(ctx); err != nil {
		return false, 0, err
	}
	// The hold the attempt is sent for: a downgrade's, or the current hold
	// (a level of a read-write lock's hold in the mode it lacks, under its
	// id); nil for a new hold. Its reply is applied to that hold only (see
	// acquired).
	var sentFor *hold
	downgrade := in != nil && in.down != nil
	if downgrade {
		sentFor = in.down.h
	}
	// A read level of a hold that has one in Redis already is counted in
	// the process only: Redis keeps one read level per hold, whatever
	// the number of the handle's readers (see join).
	if t.join(m, sentFor, in) {
		return true, 0, nil
	}
	if in == nil {
		in = &intent{m: m, plain: true} // a Tracker on its own: a plain holder
	}
	// Read after the join: a hold that ended before the read could join
	// it (lost, or force-unlocked) is not the one a plain attempt is sent
	// for.
	if !downgrade {
		sentFor = t.current()
	}
	fresh := sentFor == nil // id is a wait's, retired by any undo
	id, seq := t.waitID(sentFor), t.seqs.Add(1)
	// A read level is tagged with the number of the attempt that took it
	// (see hold.tag), and given back by it: a give-back, however late it
	// runs, never removes a read level the hold took again since. So an
	// attempt under the current hold's id (a downgrade) whose outcome is
	// unknown is given back a second time, as one under a wait's retired
	// id is: a copy of it run after the first give-back would otherwise
	// leave a read level under the hold, renewed with it.
	var tag uint64
	if m == Shared {
		tag = seq
	}
	began := time.Now()
	undo := func(ctx context.Context, g *Grant) {
		t.undo(ctx, owed{m, id, tag})
		if g == nil && (fresh || tag != 0) {
			t.undoAgain(owed{m, id, tag}, began)
		}
	}
	g, sent, err := Take(ctx, t.cfg.Lease, func(ctx context.Context) (Grant, error) { return try(ctx, id, seq) }, undo)
	if err != nil || !g.OK {
		if err == nil {
			err = g.Refused
		}
		return false, g.Wait, err
	}
	h := t.acquired(id, g.Levels, g.Token, sent, sentFor, tag, in)
	if h == nil {
		// The hold ended while the script ran, or the reply says it is
		// lost: the level it took is given back like any other the
		// caller will not have, and the hold given up is not brought
		// back. A downgrade fails with it; a further level is tried
		// again, under an id of its own.
		undo(ctx, &g)
		if downgrade {
			return false, 0, errSentForEnded
		}
		return false, 0, errs.ErrStaleReply
	}
	return true, 0, nil
}

// join records the read level of the attempt for mode m in the current
// hold (the downgrade's own, sentFor) instead of going to Redis, and
// reports whether it did: when the hold has its read level in Redis and
// another read of the handle keeps it. The caller holds op: no release
// of that level runs meanwhile, and the process's count of reads of the
// hold is exact. A Tracker on its own (in nil) never joins: it records a
// plain holder of each level it takes.
func (t *Tracker) join(m Mode, sentFor *hold, in *intent) bool {
	if m != Shared || in == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.cur
	if h == nil || !h.in(Shared) || sentFor != nil && h != sentFor {
		return false
	}
	return in.record(h, true)
}

// intent is what a take through the local line (see Lock.take) records
// in the hold its attempt took, or joined: in the critical section that
// applies the reply (acquired, begin, join), on the handle's op, so that
// another goroutine's release or join of the hold sees it at once, and a
// hold that ended meanwhile gets nothing.
type intent struct {
	m     Mode
	plain bool    // a plain hold: no record of Do's
	down  *record // a downgrade through this write record: a plain read on its units, sent for its hold only
	// What was recorded: the record made (an exclusive level, or a read
	// of RDo), the hold (nil: none, it ended), and whether the level
	// joined the hold's read level without a script.
	r      *record
	h      *hold
	joined bool
}

// record records in's level, taken (join false) or joined, in hold h,
// the current hold, and reports whether it did: not once its downgrade's
// record has ended, nor a join when the handle reads h no more. The
// caller holds Tracker.mu.
func (in *intent) record(h *hold, join bool) bool {
	if in.down != nil && in.down.depth == 0 || join && !h.reads() {
		return false
	}
	switch {
	case in.down != nil:
		in.down.reads++
		h.plainReads++
	case in.m == Shared && in.plain:
		h.plainReads++
	default:
		in.r = &record{mode: in.m, plain: in.plain, depth: 1, h: h}
		if in.m == Exclusive {
			h.x = in.r
		} else {
			if h.rdos == nil {
				h.rdos = make(map[*record]struct{})
			}
			h.rdos[in.r] = struct{}{}
		}
	}
	in.h, in.joined = h, join
	return true
}

// errSentForEnded is the error of a downgrade whose hold ended while its
// script ran.
var errSentForEnded = fmt.Errorf("%w: the hold ended while the attempt ran", errs.ErrLost)

// Undo gives back the level of mode m that an acquisition with an unknown
// outcome may have taken under hold id (or a grant to id), by that id: a
// hold has one level of each mode, which the id names. An id the
// handle was waiting with is retired (see Tracker.wait): its next attempt
// takes a new one, so a copy of the give-back that Redis runs late never
// meets a hold taken since. It runs
// without ctx's cancellation, for at most CleanupTimeout, and leaves the
// local view untouched: that was not updated for the acquisition. A Try
// that finds its acquisition must be taken back (say, not acknowledged by
// replicas) calls it too. A give-back that fails is owed: the handle's
// next attempt or release sends it again first.
//
// Undo waits for the give-back only until ctx is done: a caller whose ctx
// has ended returns at once, and the give-back finishes in the
// background (perclient.TidyUp). The handle's next attempt or release
// waits for it first (see repay).
func (t *Tracker) Undo(ctx context.Context, m Mode, id string) {
	t.undo(ctx, owed{m, id, 0})
}

// undo runs the give-back o as Undo says.
func (t *Tracker) undo(ctx context.Context, o owed) {
	t.retire(o.id)
	t.later(ctx, CleanupTimeout, func(ctx context.Context) { t.giveBack(ctx, o) })
}

// againAfter is how long after an attempt whose outcome is unknown,
// begun at began, undoAgain gives it back once more: past the deadline
// of every copy of it (exactly.RequestWindow), with a second for the
// error of the client's estimate of the server's clock.
const againAfter = exactly.RequestWindow + time.Second

// undoAgain sends the give-back o of an attempt whose outcome is unknown,
// made under a wait's hold id (retired by the first give-back) or tagged
// (a read level: see Attempt), once more (GiveBackAgain).
func (t *Tracker) undoAgain(o owed, began time.Time) {
	GiveBackAgain(t.cfg.RDB, began, func(ctx context.Context) { _ = t.send(ctx, o) })
}

// GiveBackAgain runs give, the give-back of an attempt begun at began
// whose outcome is unknown, once more when no copy of the attempt can run
// any more (againAfter from began). A copy that Redis runs after the
// first give-back, before its deadline (held up in a stalled server, or
// retransmitted by TCP), takes a free lock or permit under an id that no
// call of the handle releases or renews: without this it would stand for
// a whole lease. The id is never used again, so the give-back changes
// nothing when there was no such copy. It is best effort: a timer, not a
// goroutine, waits for it (a process that exits first leaves the copy's
// hold to its lease), and a failure is not owed.
func GiveBackAgain(rdb redis.UniversalClient, began time.Time, give func(ctx context.Context)) {
	time.AfterFunc(time.Until(began.Add(againAfter)), func() {
		perclient.TidyUp(background, rdb, CleanupTimeout, give)
	})
}

// later runs job, a give-back of the handle's, as perclient.TidyUp does,
// for at most limit: in the background once ctx is done. Until job
// returns, the handle's next attempt or release waits for it (repay), as
// it would if job ran on the caller's goroutine.
func (t *Tracker) later(ctx context.Context, limit time.Duration, job func(ctx context.Context)) {
	t.mu.Lock()
	if t.giving == 0 {
		t.given = make(chan struct{})
	}
	t.giving++
	t.mu.Unlock()
	perclient.TidyUp(ctx, t.cfg.RDB, limit, func(ctx context.Context) {
		defer func() {
			t.mu.Lock()
			if t.giving--; t.giving == 0 {
				close(t.given)
			}
			t.mu.Unlock()
		}()
		job(ctx)
	})
}

// settled waits until no give-back of the handle runs in the background,
// or ctx is done.
func (t *Tracker) settled(ctx context.Context) error {
	t.mu.Lock()
	given, busy := t.given, t.giving > 0
	t.mu.Unlock()
	if !busy {
		return nil
	}
	select {
	case <-given:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// owed is a give-back: the arguments of its release (see Config.Release).
type owed struct {
	m   Mode
	id  string
	tag uint64
}

// giveBack runs the give-back o, and owes it when it fails. A level that
// an attempt took and nobody gave back would otherwise stand in Redis
// until its lease ran out (under a read-write lock's hold that goes on,
// renewed with it). Sending it again is safe however late the first one
// runs: it names its hold id, never reused.
func (t *Tracker) giveBack(ctx context.Context, o owed) {
	if err := t.send(ctx, o); err != nil {
		t.mu.Lock()
		t.owed = append(t.owed, o)
		t.mu.Unlock()
	}
}

// send runs the give-back o once. It fails only when the give-back is
// still owed: on any error but WRONGTYPE (the name now holds something
// else, with nothing of the handle's to give back). A level given back passes the
// lock on as a release does: to a waiter of this process, at once
// (Config.Granted).
func (t *Tracker) send(ctx context.Context, o owed) error {
	sent := time.Now()
	out, err := t.cfg.Release(ctx, o.m, o.id, o.tag, true)
	if err == nil && out.Grantee != "" && t.cfg.Granted != nil {
		t.cfg.Granted(out.Grantee, out.Grant, sent)
	}
	if errs.IsWrongType(err) {
		return nil
	}
	return err
}

// repay sends the owed give-backs again, oldest first, before an attempt:
// the attempt would report what they give back as held. They run on the
// attempt's ctx, as the attempt would: a timeout of their own would fail
// them with context.DeadlineExceeded while ctx runs on (waiting for a
// connection, say), which a wait takes for the end of its ctx rather
// than a fault to ride out. It returns the first failure, owing that
// give-back and the ones after it still; the caller holds op. Give-backs
// still running in the background are waited for first: one that fails
// is owed then.
func (t *Tracker) repay(ctx context.Context) error {
	if err := t.settled(ctx); err != nil {
		return err
	}
	return t.sendOwed(ctx)
}

// sendOwed sends the owed give-backs and releases, oldest first, as repay
// does; the caller holds op.
func (t *Tracker) sendOwed(ctx context.Context) error {
	for {
		t.mu.Lock()
		if len(t.owed) == 0 {
			t.mu.Unlock()
			return nil
		}
		o := t.owed[0]
		t.mu.Unlock()
		if err := t.send(ctx, o); err != nil {
			return err
		}
		t.mu.Lock()
		t.owed = t.owed[1:]
		t.mu.Unlock()
	}
}

// onEnd arranges for cancel to be called when hold h ends (lost,
// force-unlocked or released), at once if it has ended or is nil, and
// returns what undoes that: a Do that returns leaves nothing behind in a
// hold that goes on.
func (t *Tracker) onEnd(h *hold, cancel context.CancelFunc) (stop func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h == nil || t.cur != h {
		cancel()
		return func() {}
	}
	if h.ends == nil {
		h.ends = make(map[int]context.CancelFunc)
	}
	n := h.endN
	h.endN++
	h.ends[n] = cancel
	return func() {
		t.mu.Lock()
		delete(h.ends, n)
		t.mu.Unlock()
	}
}

// repayBehind sends the owed releases in the background, when the handle
// runs no script and no give-back: a release that failed under a hold
// that goes on (a read-write lock's write level under read levels, see
// abandon) is not left to the handle's next call, while the renewals of
// that hold keep it standing in Redis. The watchdog calls it with each
// renewal of the hold, so a release that fails again is sent once a
// renewal period until it goes through or the hold ends.
func (t *Tracker) repayBehind() {
	t.mu.Lock()
	idle := len(t.owed) > 0 && t.giving == 0
	t.mu.Unlock()
	if !idle || !t.op.TryAcquire(1) {
		return
	}
	t.later(background, CleanupTimeout, func(ctx context.Context) {
		defer t.op.Release(1)
		_ = t.sendOwed(ctx)
	})
}

// background is a ctx that is done already: a job run later on it (see
// Tracker.later) is not waited for.
var background = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
