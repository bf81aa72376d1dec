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

// UnlockedGrant converts the reply of a mutex release script that may
// grant the lock (see Unlocked).
func UnlockedGrant(u script.Unlocked) Released {
	r := Unlocked(u.Holds)
	r.Grantee, r.Grant = u.Grantee, script.Grant{Token: u.Token, ID: u.Grantee, Seq: u.Seq}
	return r
}

// Unlocked converts the reply of a one-mode release script: the remaining
// hold count, or script.UnlockNotHeld.
func Unlocked(n int64) Released {
	if n == script.UnlockNotHeld {
		return Released{NotHeld: true}
	}
	return Released{Levels: Levels{Exclusive: n}}
}

// releaseRetries is how many times Release resends a release whose reply
// was lost.
const releaseRetries = 2

// refusalTime bounds how long Release keeps resending a release that Redis
// refused with a transient reply (errs.Transient): TRYAGAIN while the
// lock's slot migrates (Redis refuses a script naming a key that is absent
// there, and every release names one: a channel or a counter that is not
// a key; a fairlock release with fencing says TRYAGAIN itself when the
// waiter it would grant to has moved ahead of the lock), READONLY or
// CLUSTERDOWN in a failover, LOADING. A refused script changed nothing the
// release is about, so resending it is safe; past refusalTime the error is
// returned and the hold ends as after any failed release.
const refusalTime = 2 * time.Second

// Release releases one level of mode m. It returns errs.ErrNotHeld
// when the handle holds no level of m in Redis (never took one, released
// it already, or lost it: then the hold ends as lost), or the error of
// the script, made to match ctx.Err() when ctx is done.
//
// When the reply of a release is lost, Release retries it, knowing that
// the first may have gone through: the retry releases nothing more and
// reads as success. If the release of the handle's last level fails
// nonetheless, the hold ends all the same: renewals stop and Done closes,
// so Redis frees the lock when its lease runs out, if not before, instead
// of the watchdog keeping alive a lock its holder wanted released (and
// whose error it may well ignore, as in defer m.Unlock(ctx)). Its release
// is owed, by the hold's id, and sent before the handle's next script
// (repay) or in the background with a renewal (repayBehind).
//
// The give-backs the handle owes (see Undo) are sent again first.
//
// A renewal that runs after the release and finds the lock gone, while
// the release's reply is still on its way, ends the hold at once but is
// reported to the Lost hook only if the release turns out not to have
// ended the hold itself.
func (t *Tracker) Release(ctx context.Context, m Mode) error {
	return t.releaseHold(ctx, t.current(), nil, m)
}

// errReleaseEnded is the error of a release of a hold that ended before
// the release could run: lost or force-unlocked, its release is owed by
// its id already (see end).
var errReleaseEnded = fmt.Errorf("%w: the hold ended before its release ran", errs.ErrNotHeld)

// releaseHold releases the level of mode m that r holds in hold h (nil:
// the handle holds nothing), the hold the caller's level is part of: r
// leaves h's holders on the handle's op (see leave), and the level goes
// in Redis with its last holder; nothing is sent once h is not the
// current hold, whatever hold the handle has by then. A read's op is
// waited for past ctx's deadline, for as long as the handle's scripts
// can keep it (settleTimeout): counted out without op, a read could
// leave while another goroutine joins the level the release then takes
// away.
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
	// A write record's units go back once the release is settled: the
	// next call through the local line finds the lock released in Redis.
	defer t.give(units)
	switch {
	case err != nil:
		return cmp.Or(t.repay(ctx), err)
	case !send:
		return nil // another holder keeps the level
	}
	// What the handle owes goes first, in order; should it fail again,
	// it stays owed, and the release is sent all the same. (An owed
	// release under this id names the level it is for: a read level
	// taken again since, a downgrade released and taken again, has a tag
	// of its own; see the package doc.)
	_ = t.repay(ctx)
	// The release names the hold's id: a copy of it that Redis runs
	// late, after a resend went through and the handle took the lock
	// again, finds that later hold under an id of its own and changes
	// nothing.
	sent := time.Now()
	out, unsure, err := t.release(ctx, h.id, m, tag)
	gone := err == nil && out.NotHeld && !unsure
	// A release of m changes no level of the other mode: a reply that
	// lacks the one the hold has says it went from Redis unseen, as a
	// reply to an attempt would (see acquired).
	lacks := err == nil && !out.NotHeld && other && out.Levels[Shared-m] == 0
	if err == nil && !gone && !lacks && out.Grantee != "" && t.cfg.Granted != nil {
		t.cfg.Granted(out.Grantee, out.Grant, sent)
	}
	return t.finish(h, m, other, gone, lacks, errs.CtxErr(ctx, err))
}

// settleTimeout bounds how long a read's release waits for the handle's
// op (see releaseHold): longer than any script of the handle keeps it,
// each bounded by the client's timeouts and the engine's retries.
const settleTimeout = 30 * time.Second

// leave counts r out of hold h's holders of mode m, whatever Redis will
// say (a hold that is lost is over too), and reports whether the level
// goes in Redis: r was its last holder, and h is live. r is h's write
// record or a read of RDo; nil is a plain holder: a plain read, or of
// mode Exclusive the handed mark (settleHanded, which holds the gate, so
// the mark is there), else the write record of a Tracker on its own
// (whose records are all plain). A read gives its unit of the local line
// back at once; a write record's units are returned, for the caller to
// give back once the release is settled. The error says that there is
// nothing to send: h has ended (its levels are owed by its id already:
// see end), or had no level of m. The caller holds mu.
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

// finish records the outcome of the release of hold h's level of mode m,
// on op: other says h had its level of the other mode as it was sent,
// gone that Redis had no level to release, lacks that the reply lacks
// the level of the other mode, and err that the release failed. It ends
// h when that was its last level, or the reply says h is lost.
func (t *Tracker) finish(h *hold, m Mode, other, gone, lacks bool, err error) error {
	// A loss the watchdog found meanwhile stands unless this release
	// ended the hold: it is reported once the outcome is settled, and
	// until then the release is in flight (going), so that a renewal
	// that finds the lock gone once the release ran is no loss either.
	// A loss that ended the hold meanwhile owed its other levels, not
	// this one (see owe): a failed release owes it here.
	t.mu.Lock()
	h.going = 0
	lost := h.lostWhile
	h.lostWhile = nil
	if err != nil {
		t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
	}
	empty := t.cur == h && h.empty()
	if empty && err == nil && !gone && !lacks {
		// The release ended the hold: it stays in flight until end below,
		// so that a renewal that finds the lock gone in between finds this
		// release, not a loss (end keeps it in lostWhile, and owes nothing).
		h.going = int(m) + 1
	}
	t.mu.Unlock()
	switch {
	case err != nil:
		// The caller was told the level is gone: it is owed, and the
		// last level of the hold ends it (see abandon).
		if empty {
			t.end(h, nil)
		}
		t.report(h, lost)
		return err
	case gone:
		t.end(h, errs.ErrLost) // not in Redis: nothing of it is owed
		t.report(h, lost)
		return errs.ErrNotHeld
	case lacks:
		// The hold is lost, and nothing of it is left to owe.
		t.endOwing(h, errs.ErrLost, false)
		t.report(h, lost)
		return nil
	}
	// Released, or a retry of a release that went through before its
	// reply was lost (NotHeld, unsure): that release is this one. Redis
	// reporting a level of the other mode that the hold has no holder of
	// reports one the handle let go of (a write level whose release failed
	// under read levels, still owed: see abandon): it is not the hold's.
	if empty {
		t.end(h, nil)
	} else if other {
		t.report(h, lost)
	}
	return nil
}

// release runs the release script for the level of mode m and tag tag
// of hold id.
// When the reply is lost it retries, and reports unsure: a release may
// have gone through, which is how the retry's "not held" is read (the
// script is not idempotent by itself, since a successful first run
// leaves nothing to compare the retry with).
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

// abandon is the release of r's level of mode m of hold h when it cannot
// be sent (ctx ended before the handle's op was free): the caller was
// told that level is gone, so r leaves h's holders (leave), and the
// handle owes the level's release, by the hold's id, which its next
// attempt or release sends first (repay) and a renewal of the hold sends
// in the background (repayBehind). With the hold's last level the hold
// ends: the holder wants the lock released, and the watchdog stops
// renewing it; the handle's next hold has an id of its own. Kept, a
// level would outlive its caller and be renewed with the hold for as
// long as that lasts; dropped without owing it, it would stand in Redis,
// renewed with the other levels. A hold that ended meanwhile owed its
// levels as it ended (see owe): nothing is owed twice.
func (t *Tracker) abandon(h *hold, r *record, m Mode) {
	t.mu.Lock()
	send, units, _ := t.leave(h, r, m)
	last := false
	if send {
		// Owed by id: should a failed release have gone through unseen,
		// the owed one finds the level gone and changes nothing.
		t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
		last = h.empty()
	}
	t.mu.Unlock()
	if last {
		t.end(h, nil)
	}
	t.give(units)
}

// ReleaseUntracked runs release, a release of something the handle does
// not track (a permit id acquired elsewhere) that reports false when there
// was nothing to release, and resends it while its reply is lost: once a
// run may have gone through unseen, a later run that finds nothing means
// that run released it.
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
