package wait

import (
	"context"
	"errors"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/perclient"
	"time"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/script"
)

// Attempt makes one acquisition attempt: whether it succeeded and, when
// not, how long the holder's lease still runs (0: unknown). An error ends
// the wait.
type Attempt func(ctx context.Context) (ok bool, wait time.Duration, err error)

// Wait is the wait loop every primitive shares: try; subscribe to channel
// and try again, so a release before the subscription is not missed; then
// sleep until a notification, the holder's lease end or ctx, and try
// again. maxSleep bounds each sleep: a lost notification costs that, never
// a hang. A waiter that finds channel subscribed by others of the process
// joins them first (hub.Hub.Join), so one attempt suffices before it
// sleeps.
//
// A transient error (Redis unreachable or failing over) is retried with
// backoff until ctx ends; the error then wraps ctx.Err() and that error.
// Any other error ends the wait at once. Wait leaves no subscription
// behind, and passes a notification it could not use to another waiter.
func Wait(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1}).wait(ctx)
}

// WaitKept is Wait for a waiter whose refused attempts leave a place in
// Redis that lapses unless kept (an rwlock announcement): from its first
// refusal the client's keeper keeps place, and the waiter attempts when
// notified, when the keeper says so (place gone, lock free), or after
// maxSleep.
func WaitKept(ctx context.Context, c *perclient.Client, channel string, maxSleep time.Duration, place *perclient.Place, try Attempt) error {
	return (&waiter{hub: c.Hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, client: c, place: place}).wait(ctx)
}

// WaitNeeding is Wait for a waiter that needs need units of what the
// channel's messages announce (semaphore permits): a message announcing
// fewer wakes a waiter behind it that needs no more instead.
func WaitNeeding(ctx context.Context, hub *hub.Hub, channel string, need int, maxSleep time.Duration, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: max(need, 1)}).wait(ctx)
}

// WaitInLine is Wait for a mutex: a waiter that finds waiters of the
// process parked on channel, with the holder's lease end known, queues
// behind them without attempting (the lock cannot be its before theirs),
// sleeping until a notification or that lease end. That saves a refused
// attempt per Lock and serves the process's waiters in arrival order.
// inLine reports whether the waiter may queue: a handle holding the lock
// must try, as its re-entry succeeds.
func WaitInLine(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, inLine func() bool, try Attempt) error {
	return (&waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, inLine: inLine}).wait(ctx)
}

// Retry makes attempts until one ends without a transient error or ctx
// ends, with Wait's backoff, so a call that must not wait in line (a
// re-entry) rides out a failover too. When ctx ends first, the error
// matches ctx's and wraps the last transient one.
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
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Claim completes a hold that a release granted to the waiter (a grant
// message, with a fencing token and the hold id it answers), its last
// attempt, sent at base, having been refused. When it does not (the grant
// names an earlier attempt, say), an attempt finds a grant still the
// waiter's in Redis. An error ends the wait.
type Claim func(ctx context.Context, g script.Grant, base time.Time) (bool, error)

// WaitGranted is Wait for a waiter with a place in a line in Redis and a
// channel of its own, on which a release may grant it the lock: claim
// completes a grant, unless an attempt ran since the last refusal (its
// undo may have given the grant back). Once subscribed after a refusal,
// the waiter asks recheck whether it must attempt (a grant came before the
// subscription, or the lock is free): one command, not a script.
//
// Without a place (nil), the waiter's attempts at least every maxSleep
// keep its place alive. With one, the client's keeper keeps it from the
// first refusal, and a grant's validity counts from the keeper's last
// refresh that found the place, if later than the refusal.
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
			if err := w.subscribe(ctx, w.subscribeLimit(wait)); err != nil {
				return w.ctxErr(err)
			}
			if !w.polls { // refused just now: sleep a poll interval first
				w.park()
				if w.holds(ctx) {
					if over, err := w.attempt(ctx, &wait); over {
						return err
					}
				}
				if w.sub == nil && w.lastErr == nil {
					// Timing out took as long as a sleep, and the attempt
					// above was the retry: subscribe again at once.
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

// holds reports whether the waiter, just subscribed, must attempt: always,
// unless recheck (WaitGranted) finds the lock held by another. From now on
// a release grants it and tells it; one before would have made it the
// holder. A failed recheck is answered by an attempt.
func (w *waiter) holds(ctx context.Context) bool {
	if w.recheck == nil || w.sub == nil || w.refused.IsZero() {
		return true
	}
	again, err := w.recheck(ctx)
	return err != nil || again
}

// park tells a line waiter's subscription when its last attempt was
// refused (hub.Subscription.Parked).
func (w *waiter) park() {
	if w.claim != nil && w.sub != nil {
		w.sub.Parked(w.refused)
	}
}

// granted completes a grant the waiter was woken for, if any, and reports
// whether the wait is over, and with which error.
func (w *waiter) granted(ctx context.Context) (bool, error) {
	if w.claim == nil || w.sub == nil {
		return false, nil
	}
	p, ok := w.sub.Message()
	if !ok {
		return false, nil
	}
	g, ok := script.ParseGrant(p)
	if !ok {
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

// base is when the waiter last knew its place in line there, a release
// that granted it the lock having run after: its last refused attempt's
// sending, or a later keeper refresh that found the place; zero when the
// last attempt was not refused.
func (w *waiter) base() time.Time {
	if w.refused.IsZero() || w.kept == nil {
		return w.refused
	}
	if kept := w.kept.Base(); kept.After(w.refused) {
		return kept
	}
	return w.refused
}

// keep is not inlined: attempt's frame stays on the stack through the
// script call, and a bigger one grows every parked waiter's stack.
//
//go:noinline
func (w *waiter) keep() { w.kept = w.client.Keep(*w.place) }

// attempt makes one attempt and records its outcome. It reports whether
// the wait is over (success, or an error that is not transient), and with
// which error; otherwise it sets *wait to the longest sleep: the holder's
// remaining lease, or the doubled backoff after a transient error.
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
		// Whether the lock was free is unknown: a wake-up taken before
		// stays unused, so that leaving passes it on.
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

// NextBackoff returns the backoff after d (0 for none yet): doubled,
// within [minBackoff, maxBackoff].
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

// ctxErr is the error of a wait ended by ctx, however it ended: it wraps
// ctx's error and the transient error that kept attempts failing, so a
// failed wait says why. A wait that never got a reply (say, go-redis was
// still dialing an unreachable server) wraps a brief dial's error instead.
func (w *waiter) ctxErr(err error) error {
	switch {
	case w.lastErr != nil:
		return fmt.Errorf("%w (last attempt: %w)", err, w.lastErr)
	case !w.answered && w.sub == nil: // a subscription is a reply too
		return perclient.Unanswered(err, w.hub)
	}
	return err
}

// subscribe subscribes once; a subscription Redis does not confirm within
// limit (say, while unreachable) is given up for this round.
func (w *waiter) subscribe(ctx context.Context, limit time.Duration) error {
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

// subscribeLimit bounds an unconfirmed subscription as a sleep is bounded,
// but a waiter whose place the keeper keeps (sleeping up to a lease) hears
// the keeper only once parked, so it gives up within KeepPeriod: a grant
// made to it meanwhile lapses after hold.GrantLease.
func (w *waiter) subscribeLimit(wait time.Duration) time.Duration {
	if w.place != nil {
		return min(w.bound(wait), perclient.KeepPeriod)
	}
	return w.bound(wait)
}

// sleep bounds the sleep before the next attempt. A refused waiter that
// polls sleeps at most a jittered poll interval, as no notification wakes
// it; after a transient error the backoff stands.
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
	if w.sub == nil {
		return
	}
	if w.woken {
		w.sub.CloseConsumed()
	} else {
		w.sub.Close()
	}
}
