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

// CleanupTimeout bounds each tidy-up for a caller whose ctx may be done (an
// undo, a leave, Do's Unlock); past that ctx it runs in the background.
const CleanupTimeout = time.Second

// Mode is a way of holding a lock.
type Mode int

const (
	Exclusive Mode = iota // a mutex, or the write side of a read-write lock
	Shared                // the read side of a read-write lock
)

// Levels is a script's report of a hold's levels by Mode: above 0, there.
type Levels [2]int64

// Config describes the primitive behind a Tracker.
type Config struct {
	RDB   redis.UniversalClient
	Lease time.Duration // set by every acquisition and renewal
	Owner string        // the handle's owner id, the prefix of its hold ids
	// Renew queues a renewal of hold id on s; nil for a fixed lease.
	Renew func(ctx context.Context, s redis.Scripter, id string) func() (bool, error)
	// Release runs the release script once for hold id's level of mode m, named
	// by tag (Asking.Seq; 0 for Exclusive); giveBack: the caller never had it.
	// go-redis must not retry it: the Tracker does, knowing what a retry means.
	Release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error)
	// Lost, if set, is called once with an error wrapping errs.ErrLost; it must
	// not block.
	Lost func(err error)
	// Granted, if set, is told of each release (sent at sent) that grants.
	Granted    func(grantee string, g script.Grant, sent time.Time)
	GrantLease time.Duration // if set, caps a grant to the handle (Kind.GrantLease)
	Probes     [2]wait.Probe // what a hold reports as, by the mode that began it
}

// Tracker tracks the holds of one handle. It is safe for concurrent use.
type Tracker struct {
	cfg Config
	// op serializes the handle's state-changing scripts, so the local view
	// matches Redis; held for a round trip, never across a wait.
	op        *semaphore.Weighted
	ids, seqs atomic.Uint64 // number the hold ids (waitID) and attempts (Asking.Seq)
	// mu guards cur, wait, owed, giving, given, every hold's holders and
	// Lock.queued. Taken after op, never across a wait or script; hooks and
	// cancels run after it.
	mu  sync.Mutex
	cur *hold // nil when none
	// wait is the hold id for the next hold's attempts, made when needed and
	// retired once anything is given back or left under it.
	wait string
	// gate is a Lock's local line (Lock.take); units is a write record's share.
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
//   - (I1) h is live exactly while Tracker.cur == h; once not, never again,
//     and nothing re-enters, releases or applies a reply to it.
//   - (I2) Redis has h's level of mode m, as far as the handle knows,
//     exactly when h.in(m): a holder has it, or its release is in flight.
//   - (I3) Each level in Redis has one holder (the write record or handed
//     mark; a plain or RDo read), or is its in-flight release's, or is owed
//     by mode, id and tag exactly once.
//   - (I4) going is set only while its release holds op; lostWhile only
//     while going is.
//   - (I5) The local line's units follow the holders: the write record has
//     all but those its downgraded reads borrow, a read one. They go back as
//     the hold ends (end), or a write record's once its release is settled.
//   - (I6) A handed hold has no write record: a call past the gate takes it
//     or settleHanded releases it; passes stays within maxPasses.
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
	// going is m+1 while the release of the level of mode m is in flight, and
	// lostWhile a loss the watchdog reported meanwhile (finish).
	going     int
	lostWhile error
	// Local handoffs (Lock.handOver).
	handed bool
	passes int
	since  time.Time
	// Holders (Lock.take).
	x          *record              // the exclusive hold, if any
	plainReads int64                // plain read holds, downgraded ones included
	rdos       map[*record]struct{} // the read holds of RDo
}

// New returns a Tracker for a handle that holds nothing. It does no I/O.
func New(cfg Config) *Tracker {
	return &Tracker{cfg: cfg, op: semaphore.NewWeighted(1)}
}

// Held reports whether the handle holds a level of mode m.
func (t *Tracker) Held(m Mode) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur != nil && t.cur.in(m)
}

// in reports I2; the caller holds Tracker.mu.
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

func (t *Tracker) give(n int64) {
	if t.gate != nil && n > 0 {
		t.gate.Release(n)
	}
}

// Done returns a channel closed when the current hold ends (at once if none).
func (t *Tracker) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return closed
	}
	return t.cur.done
}

// Hold returns the id and fencing token of the current hold; "" and 0 when
// it has no exclusive level.
func (t *Tracker) Hold() (id string, token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || !t.cur.in(Exclusive) {
		return "", 0
	}
	return t.cur.id, t.cur.token
}

// Drop ends the current hold as released (after a ForceUnlock).
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

// acquired records an acquisition of hold id sent at sent for hold sentFor
// (nil: none) and returns its hold; nil when sentFor ended meanwhile (I1),
// or the reply lacks a level the current hold of id has, so it is lost:
// then the caller gives back what the attempt took.
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

// begin makes a new hold under id current, valid for lease from sent until
// its first renewal; nil when id was retired (as by forced).
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

// forced ends what a ForceUnlock of the holds named took: the current hold
// if before or named, and the wait's id if named, retired so that a late
// reply or grant under it is given back.
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

// waitID returns the hold id of an attempt: sentFor's, the current hold's,
// or the wait's, made when first needed.
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

// inUse reports whether id is the current hold's or the wait's.
func (t *Tracker) inUse(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return id == t.wait || t.cur != nil && t.cur.id == id
}

func (t *Tracker) retire(id string) {
	t.mu.Lock()
	if t.wait == id {
		t.wait = ""
	}
	t.mu.Unlock()
}

// entry is the watchdog's view of h; a renewal first sends what is owed.
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

// end finishes h if still current, and reports whether it did: Done closes,
// renewals stop, Do's contexts end, and a loss runs the Lost hook, unless a
// release of h is in flight, which reports it (lostWhile). The holders go
// in the same critical section (I5): forgotten later, one could pass the
// line meanwhile and be forgotten in a new hold, its unit given twice.
func (t *Tracker) end(h *hold, lost error) bool { return t.endOwing(h, lost, lost != nil) }

// endOwing is end, owing h's levels only if owes.
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

// owe owes every level of h, given up as lost, that is not its in-flight
// release's to owe: Redis may still have it (a slow clock, a renewal that
// went through unseen). The caller holds mu.
func (t *Tracker) owe(h *hold) {
	for _, m := range [2]Mode{Exclusive, Shared} {
		if h.in(m) && h.going != int(m)+1 {
			t.owed = append(t.owed, owed{m, h.id, h.tagOf(m)})
		}
	}
}

func (h *hold) tagOf(m Mode) uint64 {
	if m == Shared {
		return h.tag
	}
	return 0
}

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

// Adopt makes the handle hold one Exclusive level taken or renewed by a
// script sent at sent outside Attempt (a permit renewed by id).
func (t *Tracker) Adopt(sent time.Time) {
	if t.Touch(sent) {
		return
	}
	t.acquired(t.waitID(nil), Levels{Exclusive: 1}, 0, sent, nil, 0, &intent{m: Exclusive, plain: true})
}
