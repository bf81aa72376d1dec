package hold

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
	"github.com/redisync/redisync/internal/watchdog"
)

// CleanupTimeout bounds each call that tidies up for a caller whose ctx
// may be done (an undo, a leave, Do's Unlock); past the caller's ctx it
// finishes in the background.
const CleanupTimeout = time.Second

// Mode is a way of holding a lock.
type Mode int

const (
	Exclusive Mode = iota // a mutex, or the write side of a read-write lock
	Shared                // the read side of a read-write lock
)

// Levels is what a script reports of a hold's levels in Redis, by Mode: a
// count above 0 says the level is there.
type Levels [2]int64

// Config describes the primitive behind a Tracker.
type Config struct {
	RDB   redis.UniversalClient
	Lease time.Duration // set by every acquisition and renewal
	// Owner is the handle's owner id, the prefix of its hold ids.
	Owner string
	// Renew runs or queues a renewal of hold id on s (see watchdog.Entry);
	// nil for a fixed lease.
	Renew func(ctx context.Context, s redis.Scripter, id string) func() (bool, error)
	// Release runs the release script once for the level of mode m of hold
	// id; tag names a read level (Asking.Seq; 0 for Exclusive), and giveBack
	// says the caller never had the level (Undo). go-redis must not retry
	// it (package script): the Tracker does, knowing what a retry means.
	Release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error)
	// Lost, if set, is called once with an error wrapping errs.ErrLost when
	// a hold is lost rather than released. It must not block.
	Lost func(err error)
	// Granted, if set, is told of a release, sent at sent, that granted the
	// lock to grantee, so that a waiter of the process completes at once.
	Granted func(grantee string, g script.Grant, sent time.Time)
	// GrantLease, if set, caps how long a grant to the handle lasts (see
	// Kind.GrantLease).
	GrantLease time.Duration
	// Probes is what a hold reports as (package observe), by the mode of
	// the level that began it.
	Probes [2]wait.Probe
}

// Tracker tracks the holds of one handle. It is safe for concurrent use.
type Tracker struct {
	cfg Config
	// op serializes the handle's state-changing scripts, so that the local
	// view matches Redis; held for one round trip, never across a wait.
	op        *semaphore.Weighted
	ids, seqs atomic.Uint64 // number the hold ids (waitID) and attempts (Asking.Seq)

	// mu guards cur, wait, owed, giving, given, every hold's holders and
	// handoff mark, and Lock.queued. Taken after op, never held across a
	// wait or a script; the Lost hook, Do's cancels and closing Done run
	// after it is let go.
	mu  sync.Mutex
	cur *hold // nil when none
	// wait is the hold id of the attempts for the next hold ("" until
	// needed). It passes to the hold they begin, and is retired once
	// anything is given back or left under it.
	wait string

	// gate is a Lock's local line (see Lock.take): a write record holds
	// units of it (all but those its downgraded reads borrow), a read one.
	// units is a write record's share. A Tracker on its own has no gate.
	gate  *semaphore.Weighted
	units int64

	owed   []owed        // failed releases and give-backs, oldest first: sent by repay
	giving int           // give-backs running in the background (later)
	given  chan struct{} // closed when giving drops to 0
}

// hold is one continuous hold of the lock by the handle: what Redis has
// under its id and who in the process holds it. id, token, done, client,
// report and since are set as it begins, wd in the same critical section;
// the rest is guarded by Tracker.mu, under which:
//
//   - (I1) h is live exactly while Tracker.cur == h; once it is not, it
//     never is again, and nothing re-enters, releases or applies a reply to
//     it (see acquired).
//   - (I2) Redis has h's level of mode m, as far as the handle knows,
//     exactly when h.in(m): a holder has it, or its release is in flight.
//   - (I3) Each level in Redis has one holder (the write record or the
//     handed mark; a plain or RDo read), or is its release's in flight, or
//     is owed by mode, id and tag exactly once (see owe).
//   - (I4) going is set only while its release holds op, and lostWhile
//     only while going is.
//   - (I5) The local line's units follow the holders: the write record has
//     all but those its downgraded reads borrow, a read one. A hold that
//     ends gives every unit back as it clears Tracker.cur (end); a write
//     record that leaves, once its release is settled (finish).
//   - (I6) A handed hold has no write record: a call past the gate takes
//     it, or settleHanded releases it; passes stays within maxPasses.
type hold struct {
	id     string
	tag    uint64 // the attempt that took the read level, naming it to its release
	token  uint64
	done   chan struct{}
	client *perclient.Client
	report *wait.HoldReport // nil: not observed
	wd     *watchdog.Hold
	ends   map[int]context.CancelFunc // Do's contexts to cancel when the hold ends (onEnd)
	endN   int

	// going is m+1 while the release of the level of mode m is in flight;
	// lostWhile is a loss the watchdog reported meanwhile (see finish).
	going     int
	lostWhile error

	// Local handoffs (Lock.handOver): handed while the hold waits for the
	// next call through the gate; passes so far; since the hold began.
	handed bool
	passes int
	since  time.Time

	// The holders in the process (see Lock.take).
	x          *record              // the exclusive hold, if any
	plainReads int64                // plain read holds, downgraded ones included
	rdos       map[*record]struct{} // the read holds of RDo
}

// New returns a Tracker for a handle that holds nothing. It does no I/O.
func New(cfg Config) *Tracker {
	return &Tracker{cfg: cfg, op: semaphore.NewWeighted(1)}
}

// Held returns 1 when the handle holds a level of mode m, as far as it
// knows, else 0.
func (t *Tracker) Held(m Mode) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil && t.cur.in(m) {
		return 1
	}
	return 0
}

// in reports whether Redis has h's level of mode m (I2). The caller holds
// Tracker.mu.
func (h *hold) in(m Mode) bool {
	switch {
	case h.going == int(m)+1:
		return true
	case m == Exclusive:
		return h.x != nil || h.handed
	}
	return h.reads()
}

func (h *hold) empty() bool { return !h.in(Exclusive) && !h.in(Shared) }

// give gives n units back to the local line, if there is one.
func (t *Tracker) give(n int64) {
	if t.gate != nil && n > 0 {
		t.gate.Release(n)
	}
}

// Done returns a channel that is closed when the current hold ends; a
// closed channel when the handle holds nothing.
func (t *Tracker) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return closed
	}
	return t.cur.done
}

// Token returns the fencing token of the current hold; 0 when none, or
// when it has no exclusive level (the token was the writer's).
func (t *Tracker) Token() uint64 {
	_, token := t.Hold()
	return token
}

// Hold returns the id and fencing token of the current hold, as Token
// does. An election proclaims under the id.
func (t *Tracker) Hold() (id string, token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || !t.cur.in(Exclusive) {
		return "", 0
	}
	return t.cur.id, t.cur.token
}

// Drop ends the current hold, if any, as released: after a ForceUnlock,
// whoever deleted the lock, the hold is over.
func (t *Tracker) Drop() {
	if h := t.current(); h != nil {
		t.end(h, nil)
	}
}

func (t *Tracker) current() *hold {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// acquired records an acquisition of hold id, sent at sent for hold
// sentFor (nil: while the handle held nothing), and returns the hold it
// belongs to, or nil when the reply is not to be applied: sentFor ended
// while the script ran (I1), or the reply lacks a level the current hold
// of that id has, which says the hold is lost; then the caller gives back
// what the attempt took.
func (t *Tracker) acquired(id string, levels Levels, token uint64, sent time.Time, sentFor *hold, tag uint64, in *intent) *hold {
	t.mu.Lock()
	h := t.cur
	if sentFor != nil && h != sentFor {
		t.mu.Unlock()
		return nil
	}
	if h != nil && h.id == id {
		if (levels[Exclusive] > 0 || !h.in(Exclusive)) && (levels[Shared] > 0 || !h.in(Shared)) {
			if tag != 0 {
				h.tag = tag
			}
			h.wd.Touch(sent)
			if !in.record(h, false) && !h.in(Shared) {
				// A downgrade whose write record left while its script
				// ran: nobody holds the read level, so it is owed (I3).
				t.owed = append(t.owed, owed{Shared, id, tag})
			}
			t.mu.Unlock()
			return h
		}
		t.mu.Unlock()
		t.end(h, errs.ErrLost)
		return nil
	}
	t.mu.Unlock()
	if h != nil {
		// Redis says this is a first acquisition: the previous hold was
		// lost before the watchdog noticed.
		t.end(h, errs.ErrLost)
	}
	return t.begin(id, token, sent, t.cfg.Lease, tag, in)
}

// begin makes a new hold under id current, valid until its first renewal
// for lease from sent, and returns it; nil when id is no longer the wait's
// (retired, as by a ForceUnlock: see forced).
func (t *Tracker) begin(id string, token uint64, sent time.Time, lease time.Duration, tag uint64, in *intent) *hold {
	h := &hold{id: id, tag: tag, token: token, done: make(chan struct{}), client: perclient.Attach(t.cfg.RDB),
		report: t.cfg.Probes[in.m].Hold(sent), since: time.Now()}
	// Current before the watchdog knows it, both under t.mu: a loss the
	// watchdog reports at once must find the hold current and h.wd set, or
	// Done would never close.
	t.mu.Lock()
	if t.wait != id {
		t.mu.Unlock()
		h.client.Detach()
		return nil
	}
	t.cur = h
	t.wait = ""
	in.record(h, false)
	h.wd = h.client.Watchdog.AddLease(t.entry(h), sent, lease)
	t.mu.Unlock()
	return h
}

// forced ends what a ForceUnlock that deleted the holds named took from
// the handle: the current hold, if it is before or named, and the wait's
// id, if named, which it retires so that a late reply or grant under it is
// given back, not held.
func (t *Tracker) forced(before *hold, named func(id string) bool) {
	t.mu.Lock()
	if t.wait != "" && named(t.wait) {
		t.wait = ""
	}
	h := t.cur
	t.mu.Unlock()
	if h != nil && (h == before || named(h.id)) {
		t.end(h, nil)
	}
}

// waitID returns the hold id an attempt uses: sentFor's, else the current
// hold's, else the wait's, made when first needed.
func (t *Tracker) waitID(sentFor *hold) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case sentFor != nil:
		return sentFor.id
	case t.cur != nil:
		return t.cur.id
	case t.wait == "":
		t.wait = t.cfg.Owner + ":" + strconv.FormatUint(t.ids.Add(1), 10)
	}
	return t.wait
}

// inUse reports whether id is the current hold's or the wait's; any other
// id of the handle's has been given up.
func (t *Tracker) inUse(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return id == t.wait || t.cur != nil && t.cur.id == id
}

// retire makes sure no attempt of the handle uses id again.
func (t *Tracker) retire(id string) {
	t.mu.Lock()
	if t.wait == id {
		t.wait = ""
	}
	t.mu.Unlock()
}

// entry is the watchdog's view of hold h. Each renewal first sends what the
// handle owes, in the background (repayBehind).
func (t *Tracker) entry(h *hold) watchdog.Entry {
	var renew func(ctx context.Context, s redis.Scripter) func() (bool, error)
	if base := t.cfg.Renew; base != nil {
		renew = func(ctx context.Context, s redis.Scripter) func() (bool, error) {
			t.repayBehind()
			return base(ctx, s, h.id)
		}
	}
	return watchdog.Entry{
		Lease: t.cfg.Lease,
		Renew: renew,
		Lost: func(err error) {
			t.end(h, fmt.Errorf("%w: %w", errs.ErrLost, err))
		},
	}
}

// end finishes h if it is still current, and reports whether it did: Done
// closes, renewals stop, Do's contexts are cancelled, and a loss (lost !=
// nil) runs the Lost hook, unless a release of h is in flight, which then
// reports it (lostWhile).
//
// Its holders are forgotten and their units given back in the same
// critical section (I5): a reply may end h with holders still counted, and
// one forgotten later could pass the line meanwhile and be forgotten in a
// new hold, its unit given to a second holder.
func (t *Tracker) end(h *hold, lost error) bool { return t.endOwing(h, lost, lost != nil) }

// endOwing is end, owing h's levels only if owes: not when a reply says
// they are gone from Redis.
func (t *Tracker) endOwing(h *hold, lost error, owes bool) bool {
	t.mu.Lock()
	if t.cur != h {
		t.mu.Unlock()
		return false
	}
	t.cur = nil
	if owes {
		t.owe(h) // before the holders go: they say which levels there are
	}
	var units int64
	if h.x != nil {
		units = t.units - h.x.reads
		h.x.depth, h.x = 0, nil
	}
	for r := range h.rdos {
		r.depth = 0
	}
	units += h.plainReads + int64(len(h.rdos))
	h.plainReads, h.handed = 0, false
	clear(h.rdos)
	t.give(units)
	if lost != nil && h.going != 0 {
		h.lostWhile, lost = lost, nil
	}
	ends := h.ends
	h.ends = nil
	t.mu.Unlock()
	h.wd.Remove()
	h.client.Detach()
	close(h.done)
	for _, cancel := range ends {
		cancel()
	}
	h.report.End()
	t.report(h, lost)
	return true
}

// owe owes the release of every level of h, given up as lost: Redis may
// still have it (a slow server clock, a renewal that went through unseen),
// and the handle's next hold should not wait out its lease. A level whose
// release is in flight is that release's to owe (finish). The caller holds
// mu.
func (t *Tracker) owe(h *hold) {
	for _, m := range [2]Mode{Exclusive, Shared} {
		if h.in(m) && h.going != int(m)+1 {
			t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
		}
	}
}

// tagOf returns the tag naming h's level of mode m to its release.
func (h *hold) tagOf(m Mode) uint64 {
	if m == Shared {
		return h.tag
	}
	return 0
}

// report runs the Lost hook for a loss of h, if any.
func (t *Tracker) report(h *hold, lost error) {
	if lost == nil {
		return
	}
	h.report.Lost()
	if t.cfg.Lost != nil {
		t.cfg.Lost(lost)
	}
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Adopt makes the handle hold one level of Exclusive, taken or renewed by a
// script sent at sent outside Attempt (a leased permit renewed by id): a
// new hold when it holds none, else the hold's validity counted from sent.
func (t *Tracker) Adopt(sent time.Time) {
	if t.Touch(sent) {
		return
	}
	t.acquired(t.waitID(nil), Levels{Exclusive: 1}, 0, sent, nil, 0, &intent{m: Exclusive, plain: true})
}
