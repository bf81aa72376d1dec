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

// Attempt makes one acquisition attempt. It reports whether it succeeded
// and, when not, how long the current holder's lease still runs (0 when
// unknown). An error ends the wait.
type Attempt func(ctx context.Context) (ok bool, wait time.Duration, err error)

// Wait is the wait loop every primitive shares: try; subscribe to channel
// (confirmed by Redis); try again, so a release between the first try and
// the subscription is not missed; then sleep until a notification, the
// holder's remaining lease or ctx, and try again. Each sleep is bounded by
// maxSleep, so a lost notification costs at most that, never a hang.
//
// When other waiters of the process keep channel subscribed already, the
// waiter joins them before its first attempt instead (hub.Hub.Join): it
// is then subscribed before it tries, and one attempt is enough before it
// sleeps. Under contention that is one failed script run fewer per Lock.
//
// A transient error (Redis unreachable, restarting, failing over) does not
// end the wait: the attempt is retried with backoff until ctx ends, and the
// error returned then wraps both ctx.Err() and the last such error. Any
// other error ends the wait at once.
//
// Wait returns nil once an attempt succeeds. It leaves no subscription
// behind. A notification it received but could not use is passed to
// another local waiter.
func Wait(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, try Attempt) error {
	w := waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1}
	return w.wait(ctx)
}

// WaitKept is Wait for a waiter whose attempts, when refused, leave a
// place of its in Redis that lapses unless kept (an rwlock waiter's
// announcement): from its first refused attempt the client's keeper keeps
// place (see Client.Keep), and the waiter attempts when notified, when
// the keeper tells it to (its place is gone, or the lock is free), or
// after maxSleep.
func WaitKept(ctx context.Context, c *perclient.Client, channel string, maxSleep time.Duration, place *perclient.Place, try Attempt) error {
	w := waiter{hub: c.Hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, client: c, place: place}
	return w.wait(ctx)
}

// WaitNeeding is Wait for a waiter that needs need units of what the
// channel's messages announce, such as a semaphore waiter for need permits:
// a message announcing fewer free units does not wake it, and wakes a
// waiter behind it that needs no more than that instead.
func WaitNeeding(ctx context.Context, hub *hub.Hub, channel string, need int, maxSleep time.Duration, try Attempt) error {
	w := waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: max(need, 1)}
	return w.wait(ctx)
}

// WaitInLine is Wait for a mutex. A waiter that finds other waiters of the
// process parked on channel, with the holder's lease end known from their
// attempts, queues behind them without an attempt of its own: the lock
// cannot be its before they are served, and a release wakes the first of
// them. It sleeps until a notification, or at most until that lease end,
// then goes on as Wait. Under contention that saves a refused attempt per
// Lock, and the waiters of one process are served in arrival order.
//
// inLine reports, when the waiter is about to queue, whether it may: a
// handle that already holds the lock must try, as its re-entry succeeds.
func WaitInLine(ctx context.Context, hub *hub.Hub, channel string, maxSleep time.Duration, inLine func() bool, try Attempt) error {
	w := waiter{hub: hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, inLine: inLine}
	return w.wait(ctx)
}

// Retry makes attempts with try until one ends without a transient error
// or ctx ends, with Wait's backoff between them: a call that must not
// wait in line (a re-entry) rides out a lost reply or a failover as a
// waiting one does. It returns the last attempt's outcome; when ctx ends
// first, an error that matches ctx's and wraps the last transient one.
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

// Sleep waits for d, or until ctx is done: it reports whether d passed.
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
// message reached its subscription, carrying a fencing token and the hold id
// of the attempt it answers), the last attempt having been refused
// without error and sent at base. It reports whether it did; when not
// (the grant names an earlier attempt, say), the waiter makes an attempt
// instead, which finds a grant that is still its own in Redis. An error
// ends the wait.
type Claim func(ctx context.Context, g script.Grant, base time.Time) (bool, error)

// WaitGranted is Wait for a waiter with a place in a line in Redis and a
// channel of its own, to which a release may grant the lock: a grant
// message is completed by claim rather than by an attempt, unless an
// attempt has run since the last refusal (its reply lost, say: its undo
// may have given the grant back). A parked waiter attempts at least every
// maxSleep, which keeps its place alive (unless the keeper keeps it, see
// below).
//
// Once subscribed after a refused attempt, the waiter does not attempt
// again but asks recheck whether it must (a release granted it the lock
// between the attempt and the subscription, or the lock is free): a
// command instead of a script, under contention once per Lock.
//
// With a place (non-nil), the client's keeper keeps the waiter's place in
// line after its first refused attempt (see Client.Keep), so that the
// waiter need not attempt to keep it: it attempts when the keeper tells it
// to (its place is gone, or the lock is free) or after maxSleep, and a
// grant's validity is counted from the keeper's last refresh that found
// the place, if that is later than the last refused attempt.
func WaitGranted(ctx context.Context, c *perclient.Client, channel string, maxSleep time.Duration, place *perclient.Place, claim Claim, recheck func(ctx context.Context) (bool, error), try Attempt) error {
	w := waiter{hub: c.Hub, channel: channel, maxSleep: maxSleep, try: try, need: 1, claim: claim, recheck: recheck, client: c, place: place}
	return w.wait(ctx)
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
			over, d, err := w.attempt(ctx)
			if over {
				return err
			}
			wait = d
		}
		resubscribe = false
		if !queued && w.sub == nil && !w.polls {
			if err := w.subscribe(ctx, w.subscribeLimit(wait)); err != nil {
				return w.ctxErr(err)
			}
			// A waiter that found subscriptions refused just now sleeps
			// a poll interval after the attempt above.
			if !w.polls {
				w.park()
				if w.holds(ctx) {
					over, d, err := w.attempt(ctx)
					if over {
						return err
					}
					wait = d
				}
				if w.sub == nil && w.lastErr == nil {
					// The subscription timed out, which took as long as a
					// sleep, and the attempt above was the retry: subscribe
					// again without another attempt.
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
				w.report.Wake(woke)
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

// holds reports whether the waiter, just subscribed, must try again:
// always, except for a waiter in a line (WaitGranted) whose recheck says
// that the lock is held by another. A release from now on grants it and
// tells it; one in between would have made it the holder, and a lock
// freed another way is found free. A recheck that fails is answered by an
// attempt.
func (w *waiter) holds(ctx context.Context) bool {
	if w.recheck == nil || w.sub == nil || !w.refusedNow() {
		return true
	}
	again, err := w.recheck(ctx)
	return err != nil || again
}

// park tells the subscription, for a waiter in a line, when its last
// attempt was refused (see hub.Subscription.Parked).
func (w *waiter) park() {
	if w.claim != nil && w.sub != nil {
		w.sub.Parked(w.refused)
	}
}

// refusedNow reports whether the waiter's last attempt was refused
// without error.
func (w *waiter) refusedNow() bool { return !w.refused.IsZero() }

// granted completes a grant the waiter was woken for, if any, and
// reports whether the wait is over, and with which error.
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

// base is when the waiter last knew its place in line to be there, its
// last attempt having been refused without error: that attempt's sending,
// or a later refresh by the keeper that found the place. A release that
// granted the lock to the waiter ran after it. The zero time when the last
// attempt was not refused.
func (w *waiter) base() time.Time {
	if w.refused.IsZero() || w.kept == nil {
		return w.refused
	}
	if kept := w.kept.Base(); kept.After(w.refused) {
		return kept
	}
	return w.refused
}

// keep has the client's keeper keep the waiter's place. Not inlined:
// attempt's frame is on the stack through the whole script call, and a
// bigger one grows the stack of every parked waiter.
//
//go:noinline
func (w *waiter) keep() { w.kept = w.client.Keep(*w.place) }

// attempt makes one attempt and records its outcome. It reports whether
// the wait is over, and with which error: on success, and on an error that
// is not transient. Otherwise it returns how long to sleep at most: the
// holder's remaining lease, or the backoff after a transient error, which
// it doubles.
func (w *waiter) attempt(ctx context.Context) (bool, time.Duration, error) {
	sent := time.Now()
	ok, wait, err := w.try(ctx)
	w.report.Attempt(ctx, ok, err)
	w.refused = time.Time{}
	w.answered = w.answered || err == nil
	defer w.park()
	switch {
	case ok:
		w.woken = false
		return true, 0, nil
	case err != nil && errs.CtxDone(ctx) != nil:
		// Cut short by ctx: the error matches ctx's, and says why the
		// attempts failed, if they did.
		return true, 0, w.ctxErr(errs.CtxErr(ctx, err))
	case err != nil && !errs.Transient(err):
		return true, 0, err // a notification taken here is passed on by close
	case err != nil:
		// Whether the lock was free is unknown: a wake-up taken before
		// this attempt stays unused, so that leaving passes it on.
		w.lastErr = err
		w.backoff = NextBackoff(w.backoff)
		return false, w.backoff, nil
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
		if w.inLine != nil && w.sub != nil && wait > 0 {
			w.sub.Expect(sent.Add(wait)) // for waiters that queue behind this one
		}
	}
	w.woken = false
	return false, wait, nil
}

// Backoff between attempts that failed with a transient error.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// NextBackoff returns the backoff after one that was d (0 for none yet):
// doubled, within [minBackoff, maxBackoff].
func NextBackoff(d time.Duration) time.Duration {
	return min(max(2*d, minBackoff), maxBackoff)
}

type waiter struct {
	hub      *hub.Hub
	channel  string
	maxSleep time.Duration
	try      Attempt
	need     int                                     // units of a message it needs to proceed
	inLine   func() bool                             // WaitInLine: whether the waiter may queue; it records lease ends for those that do
	claim    Claim                                   // WaitGranted: completes a grant
	client   *perclient.Client                       // WaitGranted, WaitKept: whose keeper keeps place
	place    *perclient.Place                        // WaitGranted, WaitKept: the waiter's place, if the keeper keeps it
	kept     *perclient.Kept                         // the keeping of place, from the first refused attempt
	recheck  func(ctx context.Context) (bool, error) // WaitGranted: whether the waiter, just subscribed, must attempt
	refused  time.Time                               // when the last attempt was sent, if it was refused without error
	sub      *hub.Subscription
	polls    bool  // the server refuses subscriptions: the waiter asks it every poll interval instead
	woken    bool  // took a notification not yet acted on
	lastErr  error // the last transient error, if the last attempt failed
	answered bool  // an attempt got a reply from Redis (refused or not)
	backoff  time.Duration
	report   *Report // the acquire's report (see Probe.Begin); nil: none
}

// ctxErr is the error for a wait ended by ctx: it wraps ctx's error and
// the transient error that kept the attempts failing, if any, however
// the wait ended (in a sleep, a subscription, or an attempt cut short):
// a wait that fails says why.
//
// A wait that never got a reply (its attempts all cut short by ctx, as
// when go-redis is still dialing an unreachable server at the deadline)
// has no error of Redis to wrap: it dials Redis once, briefly, and wraps
// the dial's error, if any (see whyUnanswered).
func (w *waiter) ctxErr(err error) error {
	switch {
	case w.lastErr != nil:
		return fmt.Errorf("%w (last attempt: %w)", err, w.lastErr)
	case !w.answered && w.sub == nil: // a subscription is a reply too
		return perclient.Unanswered(err, w.hub)
	}
	return err
}

// subscribe subscribes once; a subscription that Redis does not confirm
// within limit (say, while it is unreachable) is given up for this round.
func (w *waiter) subscribe(ctx context.Context, limit time.Duration) error {
	if w.sub != nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sub, err := w.hub.SubscribeNeeding(sctx, w.channel, w.need)
	if errors.Is(err, hub.ErrRefused) {
		// The server refuses subscriptions: ask it instead, from now on.
		w.polls = true
		return nil
	}
	if err != nil {
		// Not confirmed in time: go on without it for this round, bounded
		// by limit; ctx ending ends the wait.
		return ctx.Err()
	}
	w.sub = sub
	return nil
}

// subscribeLimit bounds a subscription that Redis does not confirm, as a
// sleep is bounded: a waiter whose place the keeper keeps sleeps up to a
// lease, but hears the keeper only once parked, so it gives up a
// subscription within keepPeriod (a grant made to it meanwhile lapses
// after hold.GrantLease).
func (w *waiter) subscribeLimit(wait time.Duration) time.Duration {
	if w.place != nil {
		return min(w.bound(wait), perclient.KeepPeriod)
	}
	return w.bound(wait)
}

// sleep is how long the waiter sleeps before it attempts again: bound,
// and, for a waiter that polls and was refused, at most a jittered poll
// interval, since no notification will wake it (a release's grant waits
// in Redis for its next attempt). After a transient error the backoff
// stands: polling a server that does not answer helps nobody.
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
