// Package watchdog keeps the leases of held locks alive, one goroutine per
// Redis client, and tells a holder as soon as its hold can no longer be
// trusted.
//
// Renewals are batched: every tick renews, in pipelines, every hold that is
// due, so ten thousand holds cost a handful of round trips per period, not
// ten thousand. A hold is renewed every third of its lease.
//
// Validity is local: a hold is valid until the moment its last successful
// renewal (or its acquisition) was sent plus the lease, minus a drift
// margin. Redis measures the same lease from when it received the command,
// which is later, so a holder cut off from Redis learns that its hold is
// lost before the server can give the lock to anyone else. The timer that
// enforces this does not wait for a renewal stuck in flight.
package watchdog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrGone and ErrExpired are the reasons passed to an entry's Lost.
var (
	ErrGone    = errors.New("the lock was released or taken over by someone else")
	ErrExpired = errors.New("the lease ran out before it could be renewed")
)

// batchSize bounds one pipeline, so that a huge batch neither holds a
// connection for long nor builds one giant reply buffer.
const batchSize = 1000

// Drift is the safety margin subtracted from a lease: 5% of the lease plus
// 5ms. It covers clock rate differences between client and server and,
// above all, the delay before a busy process runs the timer that closes
// Done: the holder must give up before the server can hand the lock to
// someone else. Renewals come every third of the lease, so the margin
// costs nothing while Redis answers.
func Drift(lease time.Duration) time.Duration { return lease/20 + 5*time.Millisecond }

// ValidUntil is when a hold whose acquisition or renewal was sent at sent,
// with the given lease, stops being valid for its holder: the lease minus
// the drift margin, counted from the sending.
func ValidUntil(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - Drift(lease))
}

// Stale reports whether a grant sent at sent arrived after the validity
// the watchdog would give it: its lease may be over on the server, and
// the lock someone else's.
func Stale(sent time.Time, lease time.Duration) bool {
	return !time.Now().Before(ValidUntil(sent, lease))
}

// ErrPending, wrapped in a renewal's error, says that the renewal was not
// sent because the hold is not renewable yet (a hold passed within the
// process whose release has not run): it is tried again shortly, and it
// is not reported as a failed renewal.
var ErrPending = errors.New("renewal not due yet")

// Entry describes one hold to keep alive.
type Entry struct {
	// Renew runs or queues the renewal on s and returns a function that
	// reports, once the command has run, whether the hold still exists.
	// An error that wraps ErrGone reports it gone too, and says why (who
	// holds the lock now): Lost is given that error instead of ErrGone.
	// Nil for a fixed lease: the entry then only times the expiry.
	Renew func(ctx context.Context, s redis.Scripter) func() (bool, error)
	// Lease is the lease each acquisition or renewal sets.
	Lease time.Duration
	// Lost is called once, from the watchdog goroutine, when the hold is
	// lost. It must not block.
	Lost func(err error)
}

// Hold is a registered entry.
type Hold struct {
	e         Entry
	w         *Watchdog
	lastSent  time.Time     // when the last successful renewal or acquire was sent
	lease     time.Duration // the lease that command set: e.Lease, or a grant's
	validTill time.Time     // lastSent + lease - drift
	retryAt   time.Time     // after a failed renewal, not before this
	removed   bool
}

// Watchdog renews the holds of one Redis client.
type Watchdog struct {
	rdb redis.UniversalClient

	mu      sync.Mutex // protects holds, running, timer, timerAt and every Hold's timing
	holds   map[*Hold]struct{}
	running bool          // the loop goroutine is running
	timer   *time.Timer   // while not running: starts the loop when the first hold needs it
	timerAt time.Time     // when timer fires; zero when not armed
	kick    chan struct{} // wakes the loop early when timing changes
}

// New returns a watchdog for rdb. It starts no goroutine until a hold needs
// renewing or timing out: a hold released within a third of its lease, the
// common case, costs a runtime timer and no goroutine.
func New(rdb redis.UniversalClient) *Watchdog {
	return &Watchdog{rdb: rdb, holds: make(map[*Hold]struct{}), kick: make(chan struct{}, 1)}
}

// Add registers a hold whose acquisition was sent at sent.
func (w *Watchdog) Add(e Entry, sent time.Time) *Hold { return w.AddLease(e, sent, e.Lease) }

// AddLease registers a hold whose lease, until its first renewal, is
// lease from sent rather than e.Lease: a grant, which another client's
// script made with a short lease, counted from a command of the holder's
// sent before it. The first renewal comes a third of lease after sent,
// at once if that has passed.
func (w *Watchdog) AddLease(e Entry, sent time.Time, lease time.Duration) *Hold {
	h := &Hold{e: e, w: w}
	w.mu.Lock()
	h.setSent(sent, lease)
	w.holds[h] = struct{}{}
	if !w.running {
		w.armLocked(h.needed())
	}
	w.mu.Unlock()
	w.poke()
	return h
}

// needed is when the hold first needs the loop: its first renewal, or its
// expiry for a fixed lease.
func (h *Hold) needed() time.Time {
	if h.e.Renew == nil {
		return h.validTill
	}
	return minTime(h.validTill, h.lastSent.Add(period(h.lease)))
}

// armLocked makes sure the loop starts by at. w.mu must be held.
func (w *Watchdog) armLocked(at time.Time) {
	switch {
	case w.timerAt.IsZero():
		w.timerAt = at
		if w.timer == nil {
			w.timer = time.AfterFunc(time.Until(at), w.fire)
		} else {
			w.timer.Reset(time.Until(at)) // stopped or fired: reuse it
		}
	case at.Before(w.timerAt) && w.timer.Stop():
		w.timerAt = at
		w.timer.Reset(time.Until(at))
	}
	// Otherwise the timer fires soon enough, or has fired and fire is about
	// to start the loop.
}

// fire runs the loop on the timer's goroutine.
func (w *Watchdog) fire() {
	w.mu.Lock()
	w.timerAt = time.Time{}
	if w.running || len(w.holds) == 0 {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	w.run()
}

// Touch records that a command extending the lease (a re-entry) was sent at
// sent and succeeded.
func (h *Hold) Touch(sent time.Time) {
	h.w.mu.Lock()
	if !h.removed && sent.After(h.lastSent) {
		h.setSent(sent, h.e.Lease)
	}
	h.w.mu.Unlock()
}

// ValidTill returns when the hold stops being valid for its holder unless
// a renewal succeeds before: its last acquisition or renewal's sending,
// plus the lease that set, minus the drift margin.
func (h *Hold) ValidTill() time.Time {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.validTill
}

// Limit makes the hold's validity end by until at the latest, until a
// renewal or Extend sets it anew.
func (h *Hold) Limit(until time.Time) {
	w := h.w
	w.mu.Lock()
	if h.removed || !until.Before(h.validTill) {
		w.mu.Unlock()
		return
	}
	h.validTill = until
	if !w.running {
		w.armLocked(h.needed())
	}
	w.mu.Unlock()
	w.poke()
}

// Extend records that a command sent at sent set the hold's lease to
// lease on the server, unless a later one did already.
func (h *Hold) Extend(sent time.Time, lease time.Duration) {
	h.w.mu.Lock()
	if !h.removed && !sent.Before(h.lastSent) {
		h.setSent(sent, lease)
	}
	h.w.mu.Unlock()
}

// Remove unregisters the hold; Lost will not be called after it returns.
// It never blocks on Redis.
func (h *Hold) Remove() {
	w := h.w
	w.mu.Lock()
	h.removed = true
	delete(w.holds, h)
	// Stopped, not dropped: the next hold arms it again with Reset. (Left
	// armed, it would keep the watchdog and its client reachable for up
	// to a whole fixed lease.)
	if len(w.holds) == 0 && !w.running && !w.timerAt.IsZero() && w.timer.Stop() {
		w.timerAt = time.Time{}
	}
	w.mu.Unlock()
	w.poke()
}

func (h *Hold) setSent(sent time.Time, lease time.Duration) {
	h.lastSent, h.lease = sent, lease
	h.validTill = ValidUntil(sent, lease)
}

// Len returns the number of holds kept alive, for tests and tools.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.holds)
}

func (w *Watchdog) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// period is how often a hold is renewed.
func period(lease time.Duration) time.Duration { return lease / 3 }
