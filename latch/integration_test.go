package latch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// Integration and cluster tiers: every test runs on a real redis-server
// and on a real 3-master cluster.

// deployment is a real Redis: the shared standalone server or the shared
// 3-master cluster.
type deployment struct {
	// newClient returns a new client: a process of its own, as far as
	// redisync is concerned.
	newClient func(t *testing.T) redis.UniversalClient
	// subscribers returns how many connections subscribe to the latch's
	// channel (on a cluster, on the master that serves it).
	subscribers func(t *testing.T, name string) int64
	admin       redis.UniversalClient // for the tests' own checks
}

func eachDeployment(t *testing.T, f func(t *testing.T, d deployment)) {
	t.Run("server", func(t *testing.T) {
		srv := redistest.SharedServer(t)
		admin := srv.NewClient(t)
		f(t, deployment{
			newClient: func(t *testing.T) redis.UniversalClient { return srv.NewClient(t) },
			subscribers: func(t *testing.T, name string) int64 {
				return redistest.NumSub(t, admin, latchChannel(name))
			},
			admin: admin,
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		f(t, deployment{
			newClient: func(t *testing.T) redis.UniversalClient { return c.NewClient(t) },
			subscribers: func(t *testing.T, name string) int64 {
				return c.ShardNumSub(t, latchChannel(name))
			},
			admin: c.NewClient(t),
		})
	})
}

func latchChannel(name string) string { return keyspace.NewNames(name).LatchChannel() }

func TestSemantics(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		semantics(t, d.admin, redistest.UniqueName(t))
	})
}

func TestBadInput(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		badInput(t, d.admin, redistest.UniqueName(t))
	})
}

// TestWakeUp is the acceptance test: 20 waiters on 4 clients return
// within a second of the last CountDown (a few milliseconds on a quiet
// machine), woken by its one message (the poll interval is a minute), and
// nothing is left of the latch.
func TestWakeUp(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		const (
			clients = 4
			waiters = 20
			count   = 5
		)
		ctx := t.Context()
		name := redistest.UniqueName(t)
		mustSet(t, latch.New(d.admin, name), count)
		rdbs := make([]redis.UniversalClient, clients)
		for i := range rdbs {
			rdbs[i] = d.newClient(t)
		}
		returned := make(chan time.Time, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			l := latch.New(rdbs[i%clients], name, latch.WithPollInterval(time.Minute))
			wg.Go(func() {
				if err := l.Wait(ctx); err != nil {
					t.Error(err)
				}
				returned <- time.Now()
			})
		}
		// One subscription per client, however many of its waiters.
		redistest.WaitFor(t, 10*time.Second, func() bool { return d.subscribers(t, name) == clients })

		// count-1 CountDowns from the waiters' clients wake nobody.
		for i := range count - 1 {
			mustCountDown(t, latch.New(rdbs[i%clients], name))
		}
		wantCount(t, latch.New(d.admin, name), 1)
		select {
		case <-returned:
			t.Fatal("a waiter returned before the count reached zero")
		default:
		}
		last := time.Now()
		mustCountDown(t, latch.New(rdbs[0], name))
		wg.Wait()
		close(returned)
		var slowest time.Duration
		for at := range returned {
			slowest = max(slowest, at.Sub(last))
		}
		t.Logf("the last of %d waiters returned %v after the last CountDown was sent", waiters, slowest)
		// The waiters poll once a minute: returning within a second
		// means the CountDown's message woke them, with room for a
		// loaded machine (it takes a few milliseconds on a quiet one).
		if slowest > time.Second {
			t.Errorf("the last waiter returned %v after the last CountDown, want within 1s", slowest)
		}
		wantNoCount(t, d.admin, name)
		redistest.WaitFor(t, 5*time.Second, func() bool { return d.subscribers(t, name) == 0 })
		if n, err := d.admin.Exists(ctx, keyspace.NewNames(name).Latch()).Result(); n != 0 || err != nil {
			t.Fatalf("count key left: %d, %v", n, err)
		}
	})
}

// TestWaitCancelled: a Wait whose ctx ends returns its error and leaves
// no subscription; the count is untouched.
func TestWaitCancelled(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		l := latch.New(d.newClient(t), name)
		mustSet(t, l, 2)
		ctx, cancel := context.WithCancel(t.Context())
		waited := make(chan error, 1)
		go func() { waited <- l.Wait(ctx) }()
		redistest.WaitFor(t, 10*time.Second, func() bool { return d.subscribers(t, name) == 1 })
		cancel()
		if err := <-waited; err == nil || ctx.Err() == nil {
			t.Fatalf("Wait after cancel = %v", err)
		}
		redistest.WaitFor(t, 5*time.Second, func() bool { return d.subscribers(t, name) == 0 })
		wantCount(t, l, 2)
		if ok, err := l.Delete(t.Context()); !ok || err != nil {
			t.Fatal(ok, err)
		}
	})
}

// TestDeleteWakes: Delete of a latch above zero releases its waiters at
// once, through its message.
func TestDeleteWakes(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		mustSet(t, latch.New(d.admin, name), 9)
		waited := startWaiters(t.Context(), []redis.UniversalClient{d.newClient(t), d.newClient(t)}, name, 4, time.Minute)
		redistest.WaitFor(t, 10*time.Second, func() bool { return d.subscribers(t, name) == 2 })
		if ok, err := latch.New(d.newClient(t), name).Delete(t.Context()); !ok || err != nil {
			t.Fatal(ok, err)
		}
		// The poll interval is a minute: only the message can wake them.
		wantReturned(t, waited, 4, 10*time.Second, "Delete")
	})
}

// TestConcurrent: of 8 concurrent TrySetCounts one sets the count; then
// 100 concurrent CountDowns over 4 clients on a count of 60 leave the
// latch at zero, with no key, and never below it.
func TestConcurrent(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		rdbs := make([]redis.UniversalClient, 4)
		for i := range rdbs {
			rdbs[i] = d.newClient(t)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		set := 0
		for i := range 8 {
			l := latch.New(rdbs[i%len(rdbs)], name)
			wg.Go(func() {
				ok, err := l.TrySetCount(ctx, 60)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					set++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if set != 1 {
			t.Fatalf("%d of 8 concurrent TrySetCounts set the count, want 1", set)
		}
		waited := startWaiters(ctx, rdbs, name, 8, time.Minute)
		for i := range 100 {
			l := latch.New(rdbs[i%len(rdbs)], name)
			wg.Go(func() { mustCountDown(t, l) })
		}
		wg.Wait()
		for range 8 {
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
		}
		wantNoCount(t, d.admin, name)
		if ok, err := latch.New(d.admin, name).TrySetCount(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetCount after zero = %v, %v (the count went below zero?)", ok, err)
		}
		wantCount(t, latch.New(d.admin, name), 1)
		if _, err := latch.New(d.admin, name).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
