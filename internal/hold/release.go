package hold

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// Released is what a release script reports.
type Released struct {
	Levels  Levels       // the handle's levels afterwards
	NotHeld bool         // the handle held no level of the mode: nothing changed
	Grantee string       // the owner the release granted the lock to, if any
	Grant   script.Grant // what the grant's message carries
}

// UnlockedGrant converts the reply of a mutex release script.
func UnlockedGrant(u script.Unlocked) Released {
	r := Released{Levels: Levels{Exclusive: u.Holds}}
	if u.Holds == script.UnlockNotHeld {
		r = Released{NotHeld: true}
	}
	r.Grantee, r.Grant = u.Grantee, script.Grant{Token: u.Token, ID: u.Grantee, Seq: u.Seq}
	return r
}

// releaseRetries is how often a release whose reply was lost is resent.
const releaseRetries = 2

// refusalTime bounds the resends of a release refused with a transient
// reply (errs.Transient: TRYAGAIN, READONLY, CLUSTERDOWN, LOADING), which
// changed nothing.
const refusalTime = 2 * time.Second

// Release releases one level of mode m (package doc, "The release"). It
// returns errs.ErrNotHeld when the handle holds no level of m in Redis, or
// the script's error, made to match ctx.Err() once ctx is done.
func (t *Tracker) Release(ctx context.Context, m Mode) error {
	return t.releaseHold(ctx, t.current(), nil, m)
}

var errReleaseEnded = fmt.Errorf("%w: the hold ended before its release ran", errs.ErrNotHeld)

// releaseHold releases the level of mode m that r holds in h, for h only.
// A read waits for op past ctx (settleTimeout): counted out without op, it
// could leave as another goroutine joins the level the release then ends.
func (t *Tracker) releaseHold(ctx context.Context, h *hold, r *record, m Mode) error {
	octx := ctx
	if m == Shared {
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
	}
	if err := t.op.Acquire(octx, 1); err != nil {
		t.abandon(h, r, m)
		return err
	}
	defer t.op.Release(1)
	t.mu.Lock()
	send, units, err := t.leave(h, r, m)
	var tag uint64
	var other bool // the hold has its level of the other mode
	if send {
		h.going, tag, other = int(m)+1, h.tagOf(m), h.in(Shared-m)
	}
	t.mu.Unlock()
	// A write record's units go back once the release is settled.
	defer t.give(units)
	switch {
	case err != nil:
		return cmp.Or(t.repay(ctx), err)
	case !send:
		return nil // another holder keeps the level
	}
	// What is owed goes first; should it fail, it stays owed.
	_ = t.repay(ctx)
	sent := time.Now()
	out, unsure, err := t.release(ctx, h.id, m, tag)
	gone := err == nil && out.NotHeld && !unsure
	// A reply lacking the other mode's level says it went unseen.
	lacks := err == nil && !out.NotHeld && other && out.Levels[Shared-m] == 0
	if err == nil && !gone && !lacks && out.Grantee != "" && t.cfg.Granted != nil {
		t.cfg.Granted(out.Grantee, out.Grant, sent)
	}
	return t.finish(h, m, other, gone, lacks, errs.CtxErr(ctx, err))
}

// settleTimeout outlasts any script of the handle holding op.
const settleTimeout = 30 * time.Second

// leave counts r out of h's holders of mode m and reports whether the level
// goes in Redis: r was its last holder, and h is live. r nil is a plain
// read, or of Exclusive the handed mark (settleHanded holds the gate) or a
// lone Tracker's write record. A write record's units are returned, to give
// back once the release is settled. The caller holds mu.
func (t *Tracker) leave(h *hold, r *record, m Mode) (send bool, units int64, err error) {
	switch {
	case h == nil:
		return false, 0, errs.ErrNotHeld
	case t.cur != h:
		return false, 0, errReleaseEnded
	case !h.in(m):
		return false, 0, errs.ErrNotHeld // two releases of one level racing
	}
	if r == nil && m == Exclusive && !h.handed {
		r = h.x
	}
	switch {
	case r == nil && m == Exclusive:
		h.handed = false
	case r == nil && h.plainReads > 0:
		h.plainReads--
		if h.x != nil && h.x.reads > 0 {
			h.x.reads-- // a downgraded read, on the write record's units
		} else {
			t.give(1)
		}
	case r != nil && r.depth > 0:
		r.depth--
		if r.depth > 0 {
			break // re-entered meanwhile: the record stays
		}
		delete(h.rdos, r)
		if r == h.x {
			h.x, units = nil, t.units-r.reads // the downgraded reads keep theirs
		} else {
			t.give(1)
		}
	}
	return !h.in(m), units, nil
}

// finish records the outcome of the release of h's level of mode m (other:
// h had its other level; gone: Redis had none; lacks: the reply lacks the
// other level) and ends h with its last level, or as lost.
func (t *Tracker) finish(h *hold, m Mode, other, gone, lacks bool, err error) error {
	t.mu.Lock()
	h.going = 0
	lost := h.lostWhile
	h.lostWhile = nil
	if err != nil {
		t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)}) // in flight, owe left it to us
	}
	empty := t.cur == h && h.empty()
	if empty && err == nil && !gone && !lacks {
		// In flight until end: a renewal finding the lock gone is no loss.
		h.going = int(m) + 1
	}
	t.mu.Unlock()
	switch {
	case err != nil:
		if empty {
			t.end(h, nil)
		}
	case gone:
		t.end(h, errs.ErrLost) // this level is not in Redis, so not owed
		err = errs.ErrNotHeld
	case lacks:
		t.endOwing(h, errs.ErrLost, false)
	case empty: // released, or a resend found the first run had
		t.end(h, nil)
		return nil
	case !other:
		return nil
	}
	t.report(h, lost)
	return err
}

// release runs the release script, resending it when the reply is lost,
// and then reports unsure: a resend's "not held" may mean the first run
// went through.
func (t *Tracker) release(ctx context.Context, id string, m Mode, tag uint64) (out Released, unsure bool, err error) {
	var refused time.Time
	var backoff time.Duration
	for try := 0; ; {
		out, err = t.cfg.Release(ctx, m, id, tag, false)
		unknown := errs.OutcomeUnknown(err)
		if err != nil && !unknown && errs.Transient(err) {
			if refused.IsZero() {
				refused = time.Now()
			}
			backoff = wait.NextBackoff(backoff)
			if time.Since(refused)+backoff > refusalTime || !wait.Sleep(ctx, backoff) {
				return out, unsure, err
			}
			continue
		}
		unsure = unsure || unknown
		if !unknown || errs.CtxDone(ctx) != nil || try == releaseRetries {
			return out, unsure, err
		}
		try++
	}
}

// abandon is the release of r's level when op cannot be had before ctx
// ends: r leaves, the release is owed, and the last level ends the hold.
func (t *Tracker) abandon(h *hold, r *record, m Mode) {
	t.mu.Lock()
	send, units, _ := t.leave(h, r, m)
	last := false
	if send {
		t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
		last = h.empty()
	}
	t.mu.Unlock()
	if last {
		t.end(h, nil)
	}
	t.give(units)
}

// ReleaseUntracked runs release (false: nothing to release) for something
// the handle does not track (a permit id), resending it while its reply is
// lost: after a run that may have gone through, "nothing" means released.
func ReleaseUntracked(ctx context.Context, release func(ctx context.Context) (bool, error)) (bool, error) {
	unsure := false
	for try := 0; ; try++ {
		ok, err := release(ctx)
		if !errs.OutcomeUnknown(err) || errs.CtxDone(ctx) != nil || try == releaseRetries {
			return ok || (err == nil && unsure), errs.CtxErr(ctx, err)
		}
		unsure = true
	}
}

// Touch counts the current hold's validity from sent, a renewal sent outside
// the Tracker (a permit renewed by id), and reports whether there is one.
// Unlike Adopt it never begins a hold, which would send what the last owes.
func (t *Tracker) Touch(sent time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return false
	}
	t.cur.wd.Touch(sent)
	return true
}

// Owes reports whether the handle owes a release or a give-back.
func (t *Tracker) Owes() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.owed) > 0 || t.giving > 0
}

// Repay sends what the handle owes, serialized with its scripts; what
// fails stays owed.
func (t *Tracker) Repay(ctx context.Context) error {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return err
	}
	defer t.op.Release(1)
	return t.repay(ctx)
}

// Forgive drops what the handle owes once no script of it is in flight, or
// returns ctx's error: for a release that a later hold may make wrong (a
// permit renewed by id).
func (t *Tracker) Forgive(ctx context.Context) error {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return err
	}
	defer t.op.Release(1)
	t.mu.Lock()
	t.owed = nil
	t.mu.Unlock()
	return nil
}
