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

// CleanupTimeout bounds each call that tidies up on behalf of a caller
// whose ctx may be done: the undo of an acquisition, leaving a line, the
// Unlock of Do. A caller whose ctx ends first does not wait for it: it
// finishes in the background (see Tracker.Undo).
const CleanupTimeout = time.Second

// Mode is a way of holding a lock.
type Mode int

const (
	Exclusive Mode = iota // a mutex, or the write side of a read-write lock
	Shared                // the read side of a read-write lock
)

// Levels is what a script reports of a hold's levels in Redis, indexed by
// Mode: a count above 0 says the level is there (Redis keeps one per mode
// per hold; the handle counts none, see hold.in).
type Levels [2]int64

// Config describes the primitive behind a Tracker.
type Config struct {
	// RDB is the client the holds are kept alive through.
	RDB redis.UniversalClient
	// Lease is the lease every acquisition and renewal sets.
	Lease time.Duration
	// Owner is the handle's owner id: every hold id of the handle is
	// Owner + ":" + a number of its own (see Tracker.waitID).
	Owner string
	// Renew runs or queues a renewal of the whole hold id on s (see
	// watchdog.Entry). Nil for a fixed lease: the hold then ends when the
	// lease runs out.
	Renew func(ctx context.Context, s redis.Scripter, id string) func() (bool, error)
	// Release runs the primitive's release script once for the level of
	// mode m of hold id (a hold has one level of each mode at a time). A
	// hold id is never reused, so a copy that Redis runs late, after the
	// handle's next hold began, finds its id gone and changes nothing.
	// For a level of mode Shared, tag is the number of the attempt that
	// took it (Asking.Seq), which names it too: a read-write lock's hold
	// may take its read level again (see Tracker.Attempt). It is 0 for a
	// level of mode Exclusive, which a hold takes once at most.
	// giveBack says it gives back a level the caller never had (see
	// Undo). It must not be retried by go-redis (see package script): the
	// Tracker retries it knowing what a retry means.
	Release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error)
	// Lost, if set, is called once when a hold is lost rather than
	// released, with an error wrapping errs.ErrLost. It runs on the
	// watchdog goroutine or the caller's and must not block.
	Lost func(err error)
	// Granted, if set, is told of a release, sent at sent, that granted
	// the lock to grantee: a waiter of the same process completes its
	// hold without waiting for the grant's message.
	Granted func(grantee string, g script.Grant, sent time.Time)
	// GrantLease, if set, is how long a grant to the handle lasts, at
	// most GrantLease (see Kind.GrantLease).
	GrantLease time.Duration
	// Probes is what a hold reports as (package observe), by the mode
	// of the level that began it; the zero Probe reports nothing.
	Probes [2]wait.Probe
}

// Tracker tracks the holds of one handle. It is safe for concurrent use.
type Tracker struct {
	cfg Config

	// op serializes the handle's state-changing scripts, so that the
	// local view of the hold matches Redis. It is taken for one round
	// trip, never across a wait.
	op *semaphore.Weighted

	// ids numbers the handle's hold ids (see waitID), and seqs its
	// attempts (Asking.Seq, the tag of a read level: see Attempt).
	ids, seqs atomic.Uint64

	// mu is the handle's one lock over its holds: it protects cur, wait,
	// owed, giving and given, every hold's holders, records and handoff
	// mark, and the Lock's count of calls at its gate (Lock.queued). It
	// is taken after op, never held across a wait or a script, and nothing
	// that takes it is called while it is held; the Lost hook, Do's
	// cancels and the close of Done run once it is let go.
	mu  sync.Mutex
	cur *hold // the current hold; nil when none
	// wait is the hold id the attempts for the handle's next hold use
	// ("" until one needs it). It passes to the hold they begin, and is
	// retired as soon as anything is given back or left under it: an id
	// is never used again once a release, a give-back or a leave names
	// it, so any copy of those that Redis runs late finds nothing of a
	// later hold under its id.
	wait string

	// gate is the local line of a Lock's goroutines (see Lock.take): a
	// write record holds units of it, all but those its downgraded reads
	// borrow, and a read one, until it leaves (leave, finish) or its hold
	// ends (end). units is a write record's share. A Tracker on its own
	// has no gate: its holders hold no units.
	gate  *semaphore.Weighted
	units int64

	// owed lists the give-backs that failed (see Undo), oldest first,
	// under mu: the next attempt sends them again first.
	owed []owed
	// giving counts the give-backs running in the background (see later),
	// and given is closed when none is; under mu.
	giving int
	given  chan struct{}
}

// hold is one continuous hold of the lock by the handle: what Redis has
// under its id and who in the process holds it, in one record. id, token,
// done, client, report and since are set as it begins, wd in the same
// critical section; the rest is guarded by Tracker.mu, under which:
//
//   - (I1) h is live exactly while Tracker.cur == h; once it is not, it
//     never is again. A record of h then neither re-enters nor releases
//     anything, and a reply sent for h changes nothing (see acquired).
//   - (I2) Redis has h's level of mode m, as far as the handle knows,
//     exactly when h.in(m): a holder has it, or its release is in flight
//     (going). No count is kept: Redis keeps one level per mode per hold.
//   - (I3) Each level in Redis has one holder (the write record or the
//     handed mark; a plain or RDo read), or is the release's in flight,
//     or is owed by mode, id and tag exactly once (see owe).
//   - (I4) going is set only while its release holds op, and lostWhile
//     only while going is.
//   - (I5) The local line's units follow the holders: the write record
//     has all of them but those its downgraded reads borrow, a read one
//     (see Tracker.gate). A hold that ends gives every unit back in the
//     section that clears Tracker.cur (end); a write record that leaves
//     gives its units back once its release is settled (finish).
//   - (I6) A handed hold has no write record: a call past the gate takes
//     it, or settleHanded releases it; passes stays within maxPasses.
type hold struct {
	id string // the hold id Redis records it under
	// tag is the number of the attempt that took the hold's read level
	// (Asking.Seq), which names that level to its release: a hold may take
	// a read level again (a downgrade, released, then taken again), and a
	// late copy of the first release must not remove the second.
	tag    uint64
	token  uint64
	done   chan struct{}
	client *perclient.Client
	report *wait.HoldReport // nil: not observed
	wd     *watchdog.Hold
	ends   map[int]context.CancelFunc // Do's contexts to cancel when the hold ends (see onEnd)
	endN   int                        // numbers the entries of ends

	// going is m+1 while the release of the hold's level of mode m is in
	// flight, until its outcome is recorded (see finish): its holder
	// has left, and the level is the release's. lostWhile is the loss the
	// watchdog reported meanwhile: a renewal that runs after the release
	// finds the lock gone, and only the release's outcome tells whether
	// that was a loss.
	going     int
	lostWhile error

	// The local handoffs of the hold (see Lock.handOver): handed is set
	// while it waits in Redis for the next call through the gate, passes
	// counts the handoffs so far, and since is when it began (see
	// maxPasses).
	handed bool
	passes int
	since  time.Time

	// The calls that hold it, in the process (see Lock.take). A record
	// belongs to this hold alone (I1).
	x          *record              // the exclusive hold, if any
	plainReads int64                // plain read holds, downgraded ones included
	rdos       map[*record]struct{} // the read holds of RDo
}

// New returns a Tracker for a handle that holds nothing. It does no I/O.
func New(cfg Config) *Tracker {
	return &Tracker{cfg: cfg, op: semaphore.NewWeighted(1)}
}

// Held returns 1 when the handle holds a level of mode m, as far as it
// knows, else 0: Redis keeps one level per mode per hold.
func (t *Tracker) Held(m Mode) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil && t.cur.in(m) {
		return 1
	}
	return 0
}

// in reports whether Redis has hold h's level of mode m, as far as the
// handle knows: one of its holders has it (a record, a read, the handed
// mark), or its release is in flight (going). No count is kept: each
// level has one holder, or is owed (see owe). The caller holds
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

// empty reports whether hold h has no level left; the caller holds
// Tracker.mu.
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
// when the hold has no exclusive level (a read-write lock's write hold
// ended, its downgraded read holds remaining: the token was the writer's).
func (t *Tracker) Token() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || !t.cur.in(Exclusive) {
		return 0
	}
	return t.cur.token
}

// Hold returns the id and the fencing token of the current hold, as
// Token does: "" and 0 when none, or when it has no exclusive level. An
// election proclaims under the id (see lua/election_proclaim.lua).
func (t *Tracker) Hold() (id string, token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || !t.cur.in(Exclusive) {
		return "", 0
	}
	return t.cur.id, t.cur.token
}

// Drop ends the current hold, if any, as released: after a ForceUnlock,
// whoever deleted the lock, the handle's hold is over.
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

// acquired records a successful acquisition, sent at sent for hold
// sentFor (nil: sent while the handle held nothing), after which Redis
// counts levels for the handle, and returns the hold it belongs to. A
// reply is applied only to the hold it was sent for: when sentFor ended
// while the script ran (lost, or force-unlocked), acquired changes
// nothing and returns nil; the levels Redis reported belong to a hold
// the handle gave up. A reply under the current hold's id that lacks a
// level the hold has says that the hold is lost (its lease ran out
// unseen, or it was force-unlocked): it ends, and nothing begins under
// its id (ids are never used again); the caller gives back what the
// attempt took, by that id. The level is recorded through in (see
// intent) in the critical section that applies the reply.
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
				// ran: nobody holds the read level it took, so it is owed
				// (I3; see Lock.reenter).
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

// begin makes a new hold of levels under id current, whose lease, until
// its first renewal, is lease from sent, and returns it; nil when id is
// no longer the id of the handle's wait (retired). The id is the hold's
// from now on: the next wait of the handle takes a new one. The level is
// recorded through in (see intent) as the hold becomes current.
func (t *Tracker) begin(id string, token uint64, sent time.Time, lease time.Duration, tag uint64, in *intent) *hold {
	h := &hold{id: id, tag: tag, token: token, done: make(chan struct{}), client: perclient.Attach(t.cfg.RDB),
		report: t.cfg.Probes[in.m].Hold(sent), since: time.Now()}
	// The hold is current before the watchdog knows it, and t.mu is held
	// across both: a loss the watchdog reports at once must find the hold
	// current, and end must find h.wd set, or the loss would be dropped and
	// Done would never close.
	t.mu.Lock()
	if t.wait != id {
		// Retired since the attempt or the grant was made (a ForceUnlock
		// deleted what it took: see forced): nothing begins under it.
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

// forced ends, after a ForceUnlock that deleted the holds named names,
// what it took from the handle: the current hold, if it is before or
// named, and the id of the handle's wait, if named (a grant to the wait
// not yet claimed, or the level of an attempt whose reply is still on its
// way), which it retires. Nothing begins under a retired id (begin), so
// such a reply or grant, however late, is given back instead of held.
func (t *Tracker) forced(before *hold, named func(id string) bool) {
	t.mu.Lock()
	if t.wait != "" && named(t.wait) {
		t.wait = ""
	}
	h := t.cur
	t.mu.Unlock()
	if h != nil && (h == before || named(h.id)) {
		t.end(h, nil) // whoever deleted the lock, the holds in h are over
	}
}

// waitID returns the hold id an attempt uses: that of hold sentFor, or of
// the current hold (a read-write lock's read level taken while the handle
// holds the write level), or else the id of the handle's wait for its
// next hold, made when first needed.
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

// inUse reports whether id is the current hold's or the one the
// handle's next attempt uses: an id of the handle's that is neither has
// been given up, and whatever Redis holds under it is to be given back.
func (t *Tracker) inUse(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return id == t.wait || t.cur != nil && t.cur.id == id
}

// retire makes sure that no attempt of the handle uses id again: a
// release, a give-back or a leave names it now.
func (t *Tracker) retire(id string) {
	t.mu.Lock()
	if t.wait == id {
		t.wait = ""
	}
	t.mu.Unlock()
}

// entry is the watchdog's view of hold h. Each renewal first sends, in
// the background, the releases the handle owes (repayBehind).
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

// end finishes hold h if it is still current: Done closes, renewals stop,
// the contexts of Do are cancelled, and for a loss (lost != nil) the Lost
// hook runs, unless a release of h is in flight: then the loss is kept for
// the release to report if it does not end the hold itself. It reports
// whether it ended h.
//
// However h ends, its holders are forgotten, and their units of the
// local line given back (I5), in the critical section that ends it. A
// release that ends the hold has counted its own holder out, and leaves
// nothing else; but a reply may end it with holders still counted (it
// says a level is gone that a goroutine holds), and a holder of a hold
// that is over would keep its units for ever: its release finds no hold
// to release. Forgotten any later, a goroutine could pass the local line
// meanwhile (the Unlock of a forgotten hold gave its unit back), take a
// new hold, and then be forgotten in it, its unit given to a second
// holder.
func (t *Tracker) end(h *hold, lost error) bool { return t.endOwing(h, lost, lost != nil) }

// endOwing is end, owing h's levels (see owe) only if owes: not when a
// reply says they are gone from Redis.
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

// owe records the release of every level of hold h, given up as lost: Redis
// may still have it (a slow server clock, a renewal that went through
// unseen). By its id, which nothing else uses, the release is exact
// whenever it runs; the handle's next attempt sends it first (repay), so
// that the handle's next hold does not wait for the lease of the one it
// gave up. A level whose release is in flight is that release's to owe
// if it fails (see finish), so each is owed once; h is over, so a
// caller that gives its level up afterwards (abandon) owes nothing. The
// caller holds mu.
func (t *Tracker) owe(h *hold) {
	for _, m := range [2]Mode{Exclusive, Shared} {
		if h.in(m) && h.going != int(m)+1 {
			t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
		}
	}
}

// tagOf returns the tag that names hold h's level of mode m to its
// release (see hold.tag): 0 for a write level, which a hold takes once.
// The caller holds t.mu.
func (h *hold) tagOf(m Mode) uint64 {
	if m == Shared {
		return h.tag
	}
	return 0
}

// report runs the Lost hook for a loss of hold h, if any.
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

// Adopt makes the handle hold one level of Exclusive, taken or renewed by
// a script sent at sent outside Attempt (a leased permit renewed by id):
// a new hold when it holds nothing, else the hold's validity counted from
// sent.
func (t *Tracker) Adopt(sent time.Time) {
	if t.Touch(sent) {
		return
	}
	t.acquired(t.waitID(nil), Levels{Exclusive: 1}, 0, sent, nil, 0, &intent{m: Exclusive, plain: true})
}
