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

// Waiter is a wait on Channel through Client's hub; its optional fields
// add what a primitive needs to the loop.
type Waiter struct {
	Client   *perclient.Client
	Channel  string
	MaxSleep time.Duration // bounds a sleep
	// Need is the units (permits) the waiter needs, if more than one: a
	// message announcing fewer wakes a waiter that needs no more instead.
	Need int
	// Place, if set, is a place in Redis that the waiter's refusals leave
	// and that lapses (an rwlock announcement, a place in line): Client's
	// keeper keeps it while the waiter is parked, and tells it to attempt
	// when the place is gone or the lock free.
	Place *perclient.Place
	// Claim, if set, is for a waiter with a place in a line in Redis and its
	// own channel, on which a release may grant it the lock: Claim completes
	// a grant unless an attempt ran since the last refusal (its undo may
	// have given it back). Once subscribed, it asks Recheck (a command, not
	// a script) whether it must attempt. Without Place, its attempts every
	// MaxSleep keep its place; with one, the keeper does, and a grant counts
	// from the keeper's last refresh that found it, if later than the
	// refusal.
	Claim   Claim
	Recheck func(ctx context.Context) (bool, error)
}

// Wait is the wait loop every primitive shares: try; subscribe to Channel
// and try again, lest a release before the subscription be missed; sleep
// until a notification, the lease end or ctx; repeat. MaxSleep bounds a
// sleep, so a lost notification costs that, never a hang. A waiter that
// finds Channel subscribed in the process joins first (hub.Hub.Join) and
// needs one attempt. Transient errors are retried with backoff until ctx
// ends, whose error then wraps the last; any other error ends the wait. A
// notification the waiter could not use is passed on.
func (o Waiter) Wait(ctx context.Context, try Attempt) error {
	o.Need = max(o.Need, 1)
	return (&waiter{Waiter: o, try: try}).wait(ctx)
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

func (w *waiter) wait(ctx context.Context) error {
	defer w.close()
	w.report = ReportOf(ctx)
	w.polls = w.Client.Hub.Polls()
	w.sub = w.Client.Hub.JoinNeeding(w.Channel, w.Need)
	var wait time.Duration
	var timer *time.Timer
	resubscribe := false // the last subscription timed out after its retry
	for {
		if !resubscribe {
			if over, err := w.attempt(ctx, &wait); over {
				return err
			}
		}
		resubscribe = false
		if w.sub == nil && !w.polls {
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
// and one before would have made it the holder. A failed recheck attempts.
func (w *waiter) holds(ctx context.Context) bool {
	if w.Recheck == nil || w.sub == nil || w.refused.IsZero() {
		return true
	}
	again, err := w.Recheck(ctx)
	return err != nil || again
}

func (w *waiter) park() {
	if w.Claim != nil && w.sub != nil {
		w.sub.Parked(w.refused)
	}
}

// granted completes a grant the waiter was woken for, if any, and reports
// whether the wait is over.
func (w *waiter) granted(ctx context.Context) (bool, error) {
	if w.Claim == nil || w.sub == nil {
		return false, nil
	}
	p, ok := w.sub.Message()
	g, grant := script.ParseGrant(p)
	if !ok || !grant {
		return false, nil
	}
	done, err := w.Claim(ctx, g, w.base())
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
func (w *waiter) keep() { w.kept = w.Client.Keep(*w.Place) }

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
		// The lock may have been free: a wake-up taken stays unused, so that
		// leaving passes it on.
		w.lastErr = err
		w.backoff = NextBackoff(w.backoff)
		*wait = w.backoff
		return false, nil
	default:
		w.lastErr, w.backoff = nil, 0
		w.refused = sent
		if w.Place != nil {
			if w.kept == nil {
				w.keep()
			}
			if w.Place.Value != nil {
				w.kept.Expect(w.Place.Value())
			}
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
	Waiter
	try      Attempt
	kept     *perclient.Kept // from the first refused attempt
	refused  time.Time       // when the last attempt was sent, if refused without error
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
		return perclient.Unanswered(err, w.Client.RDB)
	}
	return err
}

// subscribe subscribes once, giving up for this round if Redis does not
// confirm within a sleep's bound; within KeepPeriod for a kept waiter,
// which hears the keeper only once parked (a grant made to it meanwhile
// lapses after hold.GrantLease).
func (w *waiter) subscribe(ctx context.Context, wait time.Duration) error {
	limit := w.bound(wait)
	if w.Place != nil {
		limit = min(limit, perclient.KeepPeriod)
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sub, err := w.Client.Hub.SubscribeNeeding(sctx, w.Channel, w.Need)
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
// polls, as no notification wakes it, sleeps at most a poll interval. After
// a transient error the backoff stands: polling a silent server helps no one.
func (w *waiter) sleep(wait time.Duration) time.Duration {
	if w.polls && w.lastErr == nil {
		return min(w.bound(wait), hub.Jittered())
	}
	return w.bound(wait)
}

func (w *waiter) bound(wait time.Duration) time.Duration {
	if wait <= 0 || wait > w.MaxSleep {
		return w.MaxSleep
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
