package wait

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/script"
)

// Attempt makes one acquisition attempt: whether it succeeded, else how
// long the holder's lease runs (0: unknown). An error ends the wait.
type Attempt func(ctx context.Context) (ok bool, wait time.Duration, err error)

// Wait is the wait loop every primitive shares: try; subscribe to channel
// and try again, lest a release before the subscription be missed; sleep
// until a notification, the lease end or ctx; repeat. maxSleep bounds a
// sleep, so a lost notification costs that, never a hang. A waiter that
// finds channel subscribed in the process joins first (hub.Hub.Join) and
// needs one attempt. Transient errors are retried with backoff until ctx
// ends, whose error then wraps the last; any other error ends the wait. A
// notification the waiter could not use is passed on.
func Wait(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1}).wait(ctx)
}

// WaitKept is Wait for a waiter whose refusals leave a place in Redis that
// lapses (an rwlock announcement): the client's keeper keeps it, and tells
// the waiter to attempt when the place is gone or the lock free.
func WaitKept(ctx context.Context, c *perclient.Client, channel string, maxSleep time.Duration, place *perclient.Place, try Attempt) error {
	return (&waiter{hub: c.Hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, client: c, place: place}).wait(ctx)
}

// WaitNeeding is Wait for a waiter that needs need units (permits): a
// message announcing fewer wakes a waiter that needs no more instead.
func WaitNeeding(ctx context.Context, hub *hub.Hub, channel string, need int, maxSleep time.Duration, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: max(need, 1)}).wait(ctx)
}

// WaitInLine is Wait for a mutex: a waiter that finds others of the
// process parked, the lease end known, queues behind them until a
// notification or that end without attempting, as the lock cannot be its
// first. inLine reports whether it may: a holder's re-entry must try.
func WaitInLine(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, inLine func() bool, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, inLine: inLine}).wait(ctx)
}

// Retry makes attempts, with Wait's backoff, until one ends without a
// transient error or ctx ends (the error then wraps the last), so that a
// call that must not wait in line (a re-entry) rides out a failover too.
func Retry(ctx context.Context, try func(ctx context.Context) (bool, error)) (bool, error) {
	var backoff time.Duration
	for {
		ok, err := try(ctx)
		if err == nil || !errs.Transient(err) || errs.CtxDone(ctx) != nil {
			return ok, errs.CtxErr(ctx, err)
		}
		backoff = NextBackoff(backoff)
		if !Sleep(ctx, backoff) {
			return false, errs.CtxErr(ctx, err)
		}
	}
}

// Sleep waits for d or until ctx is done, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// Claim completes a hold that a release granted to the waiter, whose last
// attempt, sent at base, was refused, and reports whether it did; if not
// (the grant names an earlier attempt), an attempt finds the grant if it
// is still the waiter's. An error ends the wait.
type Claim func(ctx context.Context, g script.Grant, base time.Time) (bool, error)

// WaitGranted is Wait for a waiter with a place in a line in Redis and its
// own channel, on which a release may grant it the lock: claim completes
// a grant unless an attempt ran since the last refusal (its undo may have
// given it back). Once subscribed, it asks recheck (a command, not a
// script) whether it must attempt. Without place, its attempts every
// maxSleep keep its place; with one, the keeper does, and a grant counts
// from the keeper's last refresh that found it, if later than the refusal.
func WaitGranted(ctx context.Context, c *perclient.Client, channel string, maxSleep time.Duration, place *perclient.Place, claim Claim, recheck func(ctx context.Context) (bool, error), try Attempt) error {
	return (&waiter{hub: c.Hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, claim: claim, recheck: recheck, client: c, place: place}).wait(ctx)
}

func (w *waiter) wait(ctx context.Context) error {
	defer w.close()
	w.report = ReportOf(ctx)
	w.polls = w.hub.Polls()
	w.sub = w.hub.JoinNeeding(w.channel, w.need)
	var wait time.Duration
	queued := false
	if w.sub != nil && w.inLine != nil {
		if d := time.Until(w.sub.Until()); d > 0 && w.inLine() {
			wait, queued = d, true
		}
	}
	var timer *time.Timer
	resubscribe := false // the last subscription timed out after its retry
	for {
		if !queued && !resubscribe {
			if over, err := w.attempt(ctx, &wait); over {
				return err
			}
		}
		resubscribe = false
		if !queued && w.sub == nil && !w.polls {
			if err := w.subscribe(ctx, wait); err != nil {
				return w.ctxErr(err)
			}
			if !w.polls { // else refused just now: poll after a sleep
				w.park()
				if w.holds(ctx) {
					if over, err := w.attempt(ctx, &wait); over {
						return err
					}
				}
				if w.sub == nil && w.lastErr == nil {
					// Timing out took a sleep, and the attempt was the retry.
					resubscribe = true
					continue
				}
			}
		}
		queued = false
		if timer == nil {
			timer = time.NewTimer(w.sleep(wait))
			defer timer.Stop()
		} else {
			timer.Reset(w.sleep(wait))
		}
		var notified, kicked <-chan struct{}
		if w.sub != nil {
			notified = w.sub.C()
		}
		if w.kept != nil {
			kicked = w.kept.C()
		}
		w.report.Park()
		woke := false // by a notification, not the timer
		select {
		case <-notified:
			w.woken, woke = true, true
			if over, err := w.granted(ctx); over {
				w.report.Wake(true)
				return err
			}
		case <-timer.C:
		case <-kicked:
		case <-ctx.Done():
			_, _ = w.granted(ctx) // a grant that came with the end of ctx is given back
			return w.ctxErr(ctx.Err())
		}
		w.report.Wake(woke)
	}
}

// holds reports whether the waiter, just subscribed, must attempt: unless
// recheck finds the lock held by another, as a release would now tell it,
// and one before would have made it the holder.
func (w *waiter) holds(ctx context.Context) bool {
	if w.recheck == nil || w.sub == nil || w.refused.IsZero() {
		return true
	}
	again, err := w.recheck(ctx)
	return err != nil || again
}

func (w *waiter) park() {
	if w.claim != nil && w.sub != nil {
		w.sub.Parked(w.refused)
	}
}

// granted completes a grant the waiter was woken for, if any, and reports
// whether the wait is over.
func (w *waiter) granted(ctx context.Context) (bool, error) {
	if w.claim == nil || w.sub == nil {
		return false, nil
	}
	p, ok := w.sub.Message()
	g, grant := script.ParseGrant(p)
	if !ok || !grant {
		return false, nil
	}
	done, err := w.claim(ctx, g, w.base())
	switch {
	case err != nil:
		return true, w.ctxErr(errs.CtxErr(ctx, err))
	case done:
		w.woken = false
		return true, nil
	}
	return false, nil // an attempt completes it
}

// base is when the waiter last knew its place there, before any release
// that granted it the lock: its last refusal, or a later refresh of the
// keeper's; zero when the last attempt was not refused.
func (w *waiter) base() time.Time {
	if w.refused.IsZero() || w.kept == nil {
		return w.refused
	}
	if kept := w.kept.Base(); kept.After(w.refused) {
		return kept
	}
	return w.refused
}

// keep is not inlined: a bigger attempt frame, on the stack through the
// script call, would grow every parked waiter's stack.
//
//go:noinline
func (w *waiter) keep() { w.kept = w.client.Keep(*w.place) }

// attempt makes one attempt and reports whether the wait is over; if not,
// it sets *wait to the holder's remaining lease, or the backoff.
func (w *waiter) attempt(ctx context.Context, wait *time.Duration) (bool, error) {
	sent := time.Now()
	ok, d, err := w.try(ctx)
	w.report.Attempt(ctx, ok, err)
	w.refused = time.Time{}
	w.answered = w.answered || err == nil
	defer w.park()
	switch {
	case ok:
		w.woken = false
		return true, nil
	case err != nil && errs.CtxDone(ctx) != nil:
		return true, w.ctxErr(errs.CtxErr(ctx, err))
	case err != nil && !errs.Transient(err):
		return true, err // close passes on a notification taken here
	case err != nil:
		// The lock may have been free: a wake-up taken stays unused.
		w.lastErr = err
		w.backoff = NextBackoff(w.backoff)
		*wait = w.backoff
		return false, nil
	default:
		w.lastErr, w.backoff = nil, 0
		w.refused = sent
		if w.place != nil {
			if w.kept == nil {
				w.keep()
			}
			if w.place.Value != nil {
				w.kept.Expect(w.place.Value())
			}
		}
		if w.inLine != nil && w.sub != nil && d > 0 {
			w.sub.Expect(sent.Add(d)) // for waiters that queue behind this one
		}
	}
	w.woken = false
	*wait = d
	return false, nil
}

// Backoff between attempts that failed with a transient error.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// NextBackoff returns the backoff after d (0: none yet).
func NextBackoff(d time.Duration) time.Duration {
	return min(max(2*d, minBackoff), maxBackoff)
}

type waiter struct {
	hub      *hub.Hub
	channel  string
	maxSleep time.Duration
	try      Attempt
	need     int                                     // units of a message it needs
	inLine   func() bool                             // WaitInLine: whether it may queue
	claim    Claim                                   // WaitGranted
	client   *perclient.Client                       // whose keeper keeps place
	place    *perclient.Place                        // WaitGranted, WaitKept: kept by the keeper, if set
	kept     *perclient.Kept                         // from the first refused attempt
	recheck  func(ctx context.Context) (bool, error) // WaitGranted
	refused  time.Time                               // when the last attempt was sent, if refused without error
	sub      *hub.Subscription
	polls    bool  // the server refuses subscriptions: poll instead
	woken    bool  // took a notification not yet acted on
	lastErr  error // the last attempt's transient error
	answered bool  // an attempt got a reply from Redis
	backoff  time.Duration
	report   *Report // nil: none
}

// ctxErr is the error of a wait ended by ctx: it wraps the last transient
// error, or for a wait that never got a reply a dial's, to say why.
func (w *waiter) ctxErr(err error) error {
	switch {
	case w.lastErr != nil:
		return fmt.Errorf("%w (last attempt: %w)", err, w.lastErr)
	case !w.answered && w.sub == nil: // a subscription is a reply too
		return perclient.Unanswered(err, w.hub)
	}
	return err
}

// subscribe subscribes once, giving up for this round if Redis does not
// confirm within a sleep's bound; within KeepPeriod for a kept waiter,
// which hears the keeper only once parked (a grant made to it meanwhile
// lapses after hold.GrantLease).
func (w *waiter) subscribe(ctx context.Context, wait time.Duration) error {
	limit := w.bound(wait)
	if w.place != nil {
		limit = min(limit, perclient.KeepPeriod)
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sub, err := w.hub.SubscribeNeeding(sctx, w.channel, w.need)
	if errors.Is(err, hub.ErrRefused) {
		w.polls = true
		return nil
	}
	if err != nil {
		return ctx.Err() // only ctx ending ends the wait
	}
	w.sub = sub
	return nil
}

// sleep bounds the sleep before the next attempt; a refused waiter that
// polls, as no notification wakes it, sleeps at most a poll interval.
func (w *waiter) sleep(wait time.Duration) time.Duration {
	if w.polls && w.lastErr == nil {
		return min(w.bound(wait), hub.Jittered())
	}
	return w.bound(wait)
}

func (w *waiter) bound(wait time.Duration) time.Duration {
	if wait <= 0 || wait > w.maxSleep {
		return w.maxSleep
	}
	return wait
}

func (w *waiter) close() {
	if w.kept != nil {
		w.kept.Stop()
	}
	switch {
	case w.sub == nil:
	case w.woken:
		w.sub.CloseConsumed()
	default:
		w.sub.Close()
	}
}
