package internal

import (
	"context"
	"time"

	"github.com/redisync/redisync/pubsub"
)

// Attempt makes one acquisition attempt. It reports whether it succeeded
// and, when not, how long the current holder's lease still runs (0 when
// unknown). An error ends the wait, unless it is Transient.
type Attempt func(ctx context.Context) (ok bool, wait time.Duration, err error)

// Wait is the wait loop every primitive shares: try; subscribe to channel
// (confirmed by Redis); try again, so a release between the first try and
// the subscription is not missed; then sleep until a notification, the
// holder's remaining lease or ctx, and try again. Each sleep is bounded by
// maxSleep, so a lost notification costs at most that, never a hang.
//
// An attempt that fails with a transient error (Redis unreachable,
// restarting, failing over) does not end the wait: it is retried every
// retryPause until it succeeds, fails otherwise, or ctx ends.
//
// Wait returns nil once an attempt succeeds, the attempt's error, or an
// error matching ctx.Err() (wrapping the last transient error, if any). It
// leaves no subscription behind. A notification it received but could not
// use is passed to another local waiter.
func Wait(ctx context.Context, hub *pubsub.Hub, channel string, maxSleep time.Duration, try Attempt) error {
	ok, wait, err := try(ctx)
	if ok {
		return nil
	}
	if err != nil && (!Transient(err) || ctx.Err() != nil) {
		return CtxErr(ctx, err)
	}
	last := err // the last transient error, reported if ctx ends
	if err != nil {
		wait = retryPause
	}
	w := waiter{hub: hub, channel: channel, maxSleep: maxSleep}
	defer w.close()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := w.subscribe(ctx, w.bound(wait)); err != nil {
			return ended(ctx, last)
		}
		ok, wait, err = try(ctx)
		if ok {
			w.woken = false
			return nil
		}
		if err != nil && (!Transient(err) || ctx.Err() != nil) {
			return CtxErr(ctx, err) // a notification taken here is passed on by close
		}
		last = err
		if err != nil {
			wait = retryPause
		}
		w.woken = false
		if w.sub == nil {
			continue // the subscription timed out: the attempt above was the retry
		}
		timer.Reset(w.bound(wait))
		select {
		case <-w.sub.C():
			w.woken = true
		case <-timer.C:
		case <-ctx.Done():
			return ended(ctx, last)
		}
	}
}

type waiter struct {
	hub      *pubsub.Hub
	channel  string
	maxSleep time.Duration
	sub      *pubsub.Subscription
	woken    bool // took a notification not yet acted on
}

// ended is the error of a wait whose ctx is done: ctx.Err(), wrapping the
// last transient error if the last attempt failed.
func ended(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	return CtxErr(ctx, last)
}

// retryPause paces the attempts of a wait while they fail transiently.
const retryPause = 100 * time.Millisecond

// subscribe subscribes once; a subscription that Redis does not confirm
// within limit (say, while it is unreachable) is given up for this round.
func (w *waiter) subscribe(ctx context.Context, limit time.Duration) error {
	if w.sub != nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sub, err := w.hub.Subscribe(sctx, w.channel)
	if err != nil {
		return ctx.Err()
	}
	w.sub = sub
	return nil
}

func (w *waiter) bound(wait time.Duration) time.Duration {
	if wait <= 0 || wait > w.maxSleep {
		return w.maxSleep
	}
	return wait
}

func (w *waiter) close() {
	if w.sub == nil {
		return
	}
	if w.woken {
		w.sub.CloseConsumed()
	} else {
		w.sub.Close()
	}
}
