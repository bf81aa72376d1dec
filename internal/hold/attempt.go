package hold

import (
	"cmp"
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
	// Refused, when not OK, is a definite refusal ending the attempt; nothing
	// was taken (a read-write lock's upgrade).
	Refused error
}

// Granted converts the reply of a one-mode acquire script.
func Granted(a script.Acquired) Grant {
	return Grant{OK: a.OK, Levels: Levels{Exclusive: a.Holds}, Token: a.Token, Wait: a.Wait}
}

// Take makes one acquisition attempt with try under the rules every
// primitive shares, and reports the grant and when its script was sent:
//
//   - An attempt of unknown outcome (reply lost, or ctx cut the wait short)
//     is given back (undo gets nil); one that failed before reaching Redis,
//     or with an error reply, took nothing.
//   - A grant read after ctx ended is given back and ctx's error returned:
//     nobody would release it.
//   - A grant read after the validity its lease gives it (watchdog.Stale) is
//     given back and reported as not granted, to be tried again. A lease of
//     0 skips this.
//
// undo must return once ctx is done, leaving the rest to the background.
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

// undoGranted runs undo on a copy of g, keeping Take's g off the heap.
func undoGranted(ctx context.Context, undo func(ctx context.Context, g *Grant), g Grant) {
	undo(ctx, &g)
}

// Try runs an acquire script once for hold id as attempt seq (Asking.Seq).
type Try func(ctx context.Context, id string, seq uint64) (Grant, error)

// Attempt makes one acquisition attempt of mode m with try, serialized with
// the handle's other scripts, under the rules of Take, and records it.
func (t *Tracker) Attempt(ctx context.Context, m Mode, try Try) (bool, time.Duration, error) {
	return t.attempt(ctx, m, try, nil)
}

// attempt is Attempt recording the level through in (nil: a plain holder).
func (t *Tracker) attempt(ctx context.Context, m Mode, try Try, in *intent) (bool, time.Duration, error) {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return false, 0, err
	}
	defer t.op.Release(1)
	if err := t.repay(ctx); err != nil {
		return false, 0, err
	}
	// The hold the reply may apply to: a downgrade's or the current; nil: new.
	var sentFor *hold
	downgrade := in != nil && in.down != nil
	if downgrade {
		sentFor = in.down.h
	}
	if t.join(m, sentFor, in) {
		return true, 0, nil
	}
	if in == nil {
		in = &intent{m: m, plain: true}
	}
	// Read after the join, which a hold ending first could not have.
	if !downgrade {
		sentFor = t.current()
	}
	fresh := sentFor == nil // id is a wait's, retired by any undo
	id, seq := t.waitID(sentFor), t.seqs.Add(1)
	// A read level is given back by its tag, so a late give-back never removes
	// one taken again since; a downgrade of unknown outcome is then given back
	// twice, as a wait's attempt is, lest a late copy leave a level renewed
	// with the hold.
	var tag uint64
	if m == Shared {
		tag = seq
	}
	began := time.Now()
	o := owed{m, id, tag}
	undo := func(ctx context.Context, g *Grant) {
		t.undo(ctx, o)
		if g == nil && (fresh || tag != 0) {
			GiveBackAgain(t.cfg.RDB, began, func(ctx context.Context) { _ = t.send(ctx, o) })
		}
	}
	g, sent, err := Take(ctx, t.cfg.Lease, func(ctx context.Context) (Grant, error) { return try(ctx, id, seq) }, undo)
	if err != nil || !g.OK {
		return false, g.Wait, cmp.Or(err, g.Refused)
	}
	h := t.acquired(id, g.Levels, g.Token, sent, sentFor, tag, in)
	if h == nil {
		// The hold ended or is lost meanwhile: the level is given back, and a new
		// one tried under an id of its own; a downgrade fails.
		undo(ctx, &g)
		if downgrade {
			return false, 0, errSentForEnded
		}
		return false, 0, errs.ErrStaleReply
	}
	return true, 0, nil
}

// join records a read level in the current hold (sentFor's, if set) without
// a script, when its read level is in Redis and kept by another read. The
// caller holds op, so no release of it runs meanwhile. A lone Tracker (in
// nil) never joins.
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

// intent is what a take through the local line records in the hold its
// attempt took or joined: in the critical section applying the reply, on
// op, so another goroutine's release or join sees it at once, and a hold
// that ended meanwhile gets nothing.
type intent struct {
	m     Mode
	plain bool    // no record of Do's
	down  *record // a downgrade through this write record
	// What was recorded: a record (exclusive or RDo), the hold (nil: ended),
	// and whether it was joined.
	r      *record
	h      *hold
	joined bool
}

// record records in's level in h, the current hold, and reports whether it
// did: not once the downgrade's record ended, nor a join once h has no
// reader. The caller holds Tracker.mu.
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

var errSentForEnded = fmt.Errorf("%w: the hold ended while the attempt ran", errs.ErrLost)

// Undo gives back, by id, the level of mode m an acquisition of unknown
// outcome may have taken under id (or a grant to id), retiring id so that a
// late copy meets no later hold. The local view is untouched. It runs
// without ctx's cancellation for CleanupTimeout at most, waited for until
// ctx is done; the handle's next script waits for the rest, and a failure
// is owed.
func (t *Tracker) Undo(ctx context.Context, m Mode, id string) {
	t.undo(ctx, owed{m, id, 0})
}

func (t *Tracker) undo(ctx context.Context, o owed) {
	t.retire(o.id)
	t.later(ctx, CleanupTimeout, func(ctx context.Context) { t.giveBack(ctx, o) })
}

// againAfter is when, after an attempt began, no copy of it can run: its
// deadline (exactly.RequestWindow), plus a second for clock estimate error.
const againAfter = exactly.RequestWindow + time.Second

// GiveBackAgain runs give, the give-back of an attempt of unknown outcome
// begun at began, once more after againAfter: a copy run after the first
// give-back (stalled server, TCP retransmission) would hold a lock under an
// id nobody renews or releases for a lease. The id is never reused, so it
// is a no-op otherwise. Best effort: a timer, and a failure is not owed.
func GiveBackAgain(rdb redis.UniversalClient, began time.Time, give func(ctx context.Context)) {
	time.AfterFunc(time.Until(began.Add(againAfter)), func() {
		perclient.TidyUp(background, rdb, CleanupTimeout, give)
	})
}

// later runs job, a give-back, as perclient.TidyUp does; repay waits for it.
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

// owed is a release or give-back to send (Config.Release's arguments).
type owed struct {
	m   Mode
	id  string
	tag uint64
}

// giveBack sends o, and owes it on failure: left in Redis the level would
// stand for a lease, or with a read-write lock's hold that goes on.
func (t *Tracker) giveBack(ctx context.Context, o owed) {
	if err := t.send(ctx, o); err != nil {
		t.mu.Lock()
		t.owed = append(t.owed, o)
		t.mu.Unlock()
	}
}

// send runs o once; an error says it is still owed (not WRONGTYPE: the name
// holds something else). A give-back passes the lock on (Config.Granted).
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

// repay waits for background give-backs, then sends what is owed, oldest
// first, before an attempt would report it as held. It runs on the
// attempt's ctx: a timeout of its own would look like ctx's end to a wait.
// The first failure stays owed with those after it. The caller holds op.
func (t *Tracker) repay(ctx context.Context) error {
	t.mu.Lock()
	given, busy := t.given, t.giving > 0
	t.mu.Unlock()
	if busy {
		select {
		case <-given:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return t.sendOwed(ctx)
}

// sendOwed is repay without the wait; the caller holds op.
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

// onEnd has cancel called when h ends (at once if it has, or is nil), and
// returns what undoes that.
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

// repayBehind sends what is owed in the background when the handle is idle.
// The watchdog calls it with each renewal, so a release that failed under
// a hold that goes on (abandon) is resent each period, not left renewed.
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

// background is a done ctx: a job run later on it is not waited for.
var background = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
