package wait_test

import (
	"context"
	"errors"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/wait"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// A waiter that arrives while another waiter of the process keeps the
// channel subscribed joins it before trying, and parks after one attempt;
// the first waiter needed two (before and after subscribing).
func TestWaitJoinsLocalWaiters(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	c := perclient.Attach(rdb)
	defer c.Detach()
	ch := redistest.UniqueName(t)
	var free atomic.Bool
	attempt := func(n *atomic.Int64) wait.Attempt {
		return func(context.Context) (bool, time.Duration, error) {
			n.Add(1)
			return free.Load(), 0, nil
		}
	}
	var first, second atomic.Int64
	errs := make(chan error, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	go func() { errs <- wait.Waiter{Client: c, Channel: ch, MaxSleep: time.Minute}.Wait(ctx, attempt(&first)) }()
	redistest.WaitFor(t, 2*time.Second, func() bool { return first.Load() == 2 })
	go func() { errs <- wait.Waiter{Client: c, Channel: ch, MaxSleep: time.Minute}.Wait(ctx, attempt(&second)) }()
	redistest.WaitFor(t, 2*time.Second, func() bool { return second.Load() >= 1 })
	time.Sleep(50 * time.Millisecond) // a second attempt would come within this
	if n := second.Load(); n != 1 {
		t.Fatalf("the joining waiter made %d attempts before parking, want 1", n)
	}
	if n := first.Load(); n != 2 {
		t.Fatalf("the first waiter made %d attempts before parking, want 2", n)
	}
	// Each release wakes one of them.
	free.Store(true)
	for range 2 {
		if err := rdb.Publish(ctx, ch, "1").Err(); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A waiter whose attempt after a wake-up fails with a transient error, and
// which then leaves, passes the wake-up on: the waiter behind it is not
// left sleeping until its lease bound with the lock free.
func TestWakeUpSurvivesTransientFailure(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	c := perclient.Attach(rdb)
	defer c.Detach()
	ch := redistest.UniqueName(t)
	var firstAttempts, tickets atomic.Int64
	firstCtx, leave := context.WithCancel(t.Context())
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- wait.Waiter{Client: c, Channel: ch, MaxSleep: time.Minute}.Wait(firstCtx, func(context.Context) (bool, time.Duration, error) {
			if firstAttempts.Add(1) <= 2 {
				return false, time.Minute, nil // parked, the lease a minute
			}
			leave() // woken: Redis fails, and the caller gives up
			return false, 0, io.ErrUnexpectedEOF
		})
	}()
	redistest.WaitFor(t, 2*time.Second, func() bool { return firstAttempts.Load() == 2 })
	// The second waiter joins behind the first, is refused once and
	// sleeps with a minute's bound.
	var secondAttempts atomic.Int64
	secondDone := make(chan error, 1)
	go func() {
		secondDone <- wait.Waiter{Client: c, Channel: ch, MaxSleep: time.Minute}.Wait(t.Context(), func(context.Context) (bool, time.Duration, error) {
			secondAttempts.Add(1)
			if t := tickets.Load(); t > 0 && tickets.CompareAndSwap(t, t-1) {
				return true, 0, nil
			}
			return false, time.Minute, nil
		})
	}()
	redistest.WaitFor(t, 2*time.Second, func() bool { return secondAttempts.Load() == 1 })
	tickets.Store(1)
	if err := rdb.Publish(t.Context(), ch, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first waiter = %v, want context.Canceled", err)
	}
	select {
	case err := <-secondDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wake-up the first waiter could not use was not passed on")
	}
}

// A waiter on a client whose waiters poll (hub.Poll: a server that
// refuses subscriptions) attempts about every hub.PollInterval, however
// long the holder's lease, and subscribes nothing; after a transient
// error it backs off as any waiter does.
func TestWaitPollsWhenRefused(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	hub.Poll(rdb)
	c := perclient.Attach(rdb)
	defer c.Detach()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var sent []time.Time
	err := wait.Waiter{Client: c, Channel: redistest.UniqueName(t), MaxSleep: time.Minute}.Wait(ctx, func(context.Context) (bool, time.Duration, error) {
		sent = append(sent, time.Now())
		switch len(sent) {
		case 1, 2, 3:
			return false, time.Minute, nil // refused: the lease runs a minute
		case 4:
			return false, 0, io.ErrUnexpectedEOF // Redis unreachable
		}
		return true, 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 5 {
		t.Fatalf("%d attempts, want 5", len(sent))
	}
	// Three refusals, each followed by a poll interval at most; a
	// scheduler's delay may stretch one, not all of them by a minute.
	if d := sent[3].Sub(sent[0]); d > 3*hub.PollInterval+time.Second {
		t.Errorf("three polls took %v, want about %v", d, 3*hub.PollInterval)
	}
	if d := sent[4].Sub(sent[3]); d < 50*time.Millisecond {
		t.Errorf("retried %v after a transient error, want the backoff (50ms at least)", d)
	}
	if n := len(mr.PubSubChannels("")); n != 0 {
		t.Errorf("%d channels subscribed, want none", n)
	}
}
