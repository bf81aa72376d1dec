package faulttest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// The latch's faults. Its waiters poll only every minute here, so a waiter
// that returns in time was woken by pub/sub: by the step to zero, or by
// the hub re-reading every wait after its connection came back.

// latchWaiters starts n waiters on the latch called name, spread over
// rdbs; each sends Wait's result on the returned channel.
func latchWaiters(ctx context.Context, rdbs []*redis.Client, name string, n int) <-chan error {
	waited := make(chan error, n)
	for i := range n {
		l := latch.New(rdbs[i%len(rdbs)], name, latch.WithPollInterval(time.Minute))
		go func() { waited <- l.Wait(ctx) }()
	}
	return waited
}

// wantReturned fails t unless n waiters return nil within the given time,
// and logs how long the last took from start.
func wantReturned(t *testing.T, waited <-chan error, n int, start time.Time, within time.Duration) {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for range n {
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("waiter: %v", err)
			}
		case <-timeout.C:
			t.Fatalf("waiters still waiting %v after the count reached zero", within)
		}
	}
	t.Logf("%d waiters returned within %v", n, time.Since(start).Round(time.Millisecond))
}

// wantWaiting fails t if a waiter has returned.
func wantWaiting(t *testing.T, waited <-chan error) {
	t.Helper()
	select {
	case err := <-waited:
		t.Fatalf("a waiter returned before the count reached zero: %v", err)
	default:
	}
}

// TestLatchPubSubKilled: the waiters' pub/sub connections are killed
// (CLIENT KILL TYPE pubsub) twice: once while the count is above zero,
// and once just before the step to zero, whose message may then reach
// nobody. Every waiter still returns, long before its poll.
func TestLatchPubSubKilled(t *testing.T) {
	const (
		clients = 4
		waiters = 20
	)
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	ch := keyspace.NewNames(name).LatchChannel()
	l := latch.New(admin, name)
	if ok, err := l.TrySetCount(ctx, 3); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rdbs := make([]*redis.Client, clients)
	for i := range rdbs {
		rdbs[i] = srv.NewClient(t)
	}
	waited := latchWaiters(ctx, rdbs, name, waiters)
	subscribed := func() bool { return redistest.NumSub(t, admin, ch) == clients }
	kill := func() {
		t.Helper()
		if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
	}
	redistest.WaitFor(t, 10*time.Second, subscribed)

	kill()
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 10*time.Second, subscribed) // the hubs came back
	wantWaiting(t, waited)

	kill()
	for range 2 {
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantReturned(t, waited, waiters, time.Now(), 10*time.Second)
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 0 })
}

// TestLatchRedisRestart: Redis is killed and started again while waiters
// wait. With persistence the count survives: the waiters wait on through
// the outage and return after the count reaches zero; a waiter whose ctx
// ends in the outage says why. Without persistence the latch is lost,
// and its waiters return as though it had reached zero (a documented
// limit).
func TestLatchRedisRestart(t *testing.T) {
	t.Run("persisted", func(t *testing.T) {
		srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
		ctx := t.Context()
		name := redistest.UniqueName(t)
		rdbs := []*redis.Client{srv.NewClient(t), srv.NewClient(t)}
		l := latch.New(rdbs[0], name)
		if ok, err := l.TrySetCount(ctx, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
		waited := latchWaiters(ctx, rdbs, name, 6)
		redistest.WaitFor(t, 10*time.Second, func() bool {
			return redistest.NumSub(t, rdbs[0], keyspace.NewNames(name).LatchChannel()) == 2
		})

		srv.Stop() // SIGKILL: what the AOF has is what survives
		// A Wait that starts and ends in the outage says why it failed.
		// (go-redis reports a refused connection only after its own dial
		// retries, about 1.7s: see TestWaitErrorSaysRedisIsDown.)
		shortCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := latch.New(rdbs[1], name).Wait(shortCtx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last attempt") {
			t.Errorf("a Wait whose ctx ended in the outage = %v, want DeadlineExceeded and the last Redis error", err)
		}
		srv.Restart(t)
		wantWaiting(t, waited)
		n, err := l.Count(ctx)
		if err != nil || n != 2 {
			t.Fatalf("Count after the restart = %d, %v; want 2", n, err)
		}
		for range 2 {
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		wantReturned(t, waited, 6, time.Now(), 10*time.Second)
	})
	t.Run("lost", func(t *testing.T) {
		srv := redistest.Start(t)
		name := redistest.UniqueName(t)
		rdbs := []*redis.Client{srv.NewClient(t), srv.NewClient(t)}
		if ok, err := latch.New(rdbs[0], name).TrySetCount(t.Context(), 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
		waited := latchWaiters(t.Context(), rdbs, name, 6)
		redistest.WaitFor(t, 10*time.Second, func() bool {
			return redistest.NumSub(t, rdbs[0], keyspace.NewNames(name).LatchChannel()) == 2
		})
		srv.Shutdown() // SHUTDOWN NOSAVE: the latch is gone
		srv.Restart(t)
		wantReturned(t, waited, 6, time.Now(), 10*time.Second)
	})
}
