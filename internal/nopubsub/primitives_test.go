package nopubsub_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// contend runs rounds critical sections of lock and unlock made by each
// of the clients, each its own handle, at most one at a time, and fails t
// on an overlap or an error.
func contend(t *testing.T, ctx context.Context, clients []*redis.Client, rounds int, make func(rdb *redis.Client) (lock, unlock func(context.Context) error)) {
	t.Helper()
	var inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	for _, rdb := range clients {
		lock, unlock := make(rdb)
		wg.Go(func() {
			for range rounds {
				if err := lock(ctx); err != nil {
					t.Errorf("lock: %v", err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				if err := unlock(ctx); err != nil {
					t.Errorf("unlock: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d critical sections overlapped another", n)
	}
}

// TestPrimitivesBehindNutcracker checks the primitives the acceptance
// test leaves out behind twemproxy, with default options, each in a few
// rounds between two clients.
func TestPrimitivesBehindNutcracker(t *testing.T) {
	d := nutcracker(t)
	clients := []*redis.Client{d.client(t), d.client(t)}

	t.Run("rwlock", func(t *testing.T) {
		ctx := bounded(t, 20*time.Second)
		name := redistest.UniqueName(t)
		contend(t, ctx, clients, 10, func(rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
			rw := rwlock.New(rdb, name)
			return rw.Lock, rw.Unlock
		})
		// A writer's release lets the readers of both clients in.
		writer := rwlock.New(clients[0], name)
		if err := writer.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		read := make(chan error, 2)
		for _, rdb := range clients {
			r := rwlock.New(rdb, name)
			go func() {
				err := r.RLock(ctx)
				if err == nil {
					err = r.RUnlock(ctx)
				}
				read <- err
			}()
		}
		if err := writer.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-read; err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("semaphore", func(t *testing.T) {
		ctx := bounded(t, 20*time.Second)
		name := redistest.UniqueName(t)
		if err := semaphore.New(clients[0], name).SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		contend(t, ctx, clients, 10, func(rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
			s := semaphore.New(rdb, name)
			return func(ctx context.Context) error { return s.Acquire(ctx, 1) },
				func(ctx context.Context) error { return s.Release(ctx, 1) }
		})
	})

	t.Run("latch", func(t *testing.T) {
		ctx := bounded(t, 20*time.Second)
		name := redistest.UniqueName(t)
		l := latch.New(clients[0], name)
		if ok, err := l.TrySetCount(ctx, 2); !ok || err != nil {
			t.Fatalf("TrySetCount: %v %v", ok, err)
		}
		waited := make(chan error, 1)
		go func() { waited <- latch.New(clients[1], name).Wait(ctx) }()
		for range 2 {
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
	})

	t.Run("multilock", func(t *testing.T) {
		ctx := bounded(t, 20*time.Second)
		name := redistest.UniqueName(t)
		contend(t, ctx, clients, 10, func(rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
			g := multilock.New(rlock.New(rdb, name+"-a"), rlock.New(rdb, name+"-b"))
			return g.Lock, g.Unlock
		})
	})

	t.Run("election", func(t *testing.T) {
		ctx := bounded(t, 20*time.Second)
		name := redistest.UniqueName(t)
		first, second := election.New(clients[0], name), election.New(clients[1], name)
		if err := first.Campaign(ctx, "first"); err != nil {
			t.Fatal(err)
		}
		observed := first.Observe(ctx)
		if l := <-observed; l.Value != "first" {
			t.Fatalf("observed %+v, want first", l)
		}
		led := make(chan error, 1)
		go func() { led <- second.Campaign(ctx, "second") }()
		if err := first.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-led; err != nil {
			t.Fatal(err)
		}
		// The observer reads again at least every second: it sees the
		// change without a notification.
		for l := range observed {
			if l.Value == "second" {
				break
			}
		}
		if err := second.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWithoutPubSub checks the option on a server that allows pub/sub:
// waiters poll from the first wait, sending no SUBSCRIBE, and a release's
// grant still reaches them.
func TestWithoutPubSub(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	ctx := bounded(t, 20*time.Second)
	name := redistest.UniqueName(t)
	clients := []*redis.Client{srv.NewClient(t), srv.NewClient(t), srv.NewClient(t)}
	contend(t, ctx, clients, 20, func(rdb *redis.Client) (func(context.Context) error, func(context.Context) error) {
		m := rlock.New(rdb, name, rlock.WithoutPubSub())
		return m.Lock, m.Unlock
	})
	stats, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := redistest.ClientCount(t, admin, "pubsub"); n != 0 {
		t.Fatalf("%d pub/sub connections, want none", n)
	}
	for _, cmd := range []string{"cmdstat_subscribe:", "cmdstat_ssubscribe:"} {
		if strings.Contains(stats, cmd) {
			t.Fatalf("a waiter subscribed:\n%s", stats)
		}
	}
}
