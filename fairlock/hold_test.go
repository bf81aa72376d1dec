package fairlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
)

// Integration tier, the hold itself and faults: mutual exclusion, wake-ups,
// force unlock, fencing, deadlines, a killed pub/sub connection.

// TestMutualExclusion: 8 clients x 8 goroutines x 25 rounds of an
// unprotected read-modify-write; the counter must come out exact.
func TestMutualExclusion(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		counter := "counter:{" + name + "}"
		clients := make([]redis.UniversalClient, 8)
		for i := range clients {
			clients[i] = newClient()
		}
		var wg sync.WaitGroup
		for _, rdb := range clients {
			for range 8 {
				wg.Go(func() {
					m := fairlock.New(rdb, name)
					for range 25 {
						if err := m.Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						n, err := rdb.Get(ctx, counter).Int()
						if err != nil && !errors.Is(err, redis.Nil) {
							t.Error(err)
						}
						if err := rdb.Set(ctx, counter, n+1, 0).Err(); err != nil {
							t.Error(err)
						}
						if err := m.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		if got, err := clients[0].Get(ctx, counter).Int(); got != 8*8*25 || err != nil {
			t.Fatalf("counter = %d, %v; want %d: mutual exclusion violated", got, err, 8*8*25)
		}
		clients[0].Del(ctx, counter)

		holder := fairlock.New(clients[0], name)
		mustLock(t, holder)
		if err := fairlock.New(clients[1], name).Unlock(ctx); !errors.Is(err, fairlock.ErrNotHeld) {
			t.Fatalf("Unlock by non-holder = %v, want ErrNotHeld", err)
		}
		if held, _ := holder.IsHeld(ctx); !held {
			t.Fatal("Unlock by non-holder released the holder")
		}
		mustUnlock(t, holder)
		assertNoKeys(t, clients[0], name)
	})
}

// TestWakesOnlyTheHead: every release is one message, on the channel of the
// waiter first in line, and nobody else's.
func TestWakesOnlyTheHead(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)
		var wg sync.WaitGroup
		for i := range 4 {
			m := fairlock.New(newClient(), name)
			wg.Go(func() {
				if err := m.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				mustUnlock(t, m)
			})
			redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == i+1 })
		}
		q, _ := line(t, admin, name)
		n := keyspace.NewNames(name)
		channels := make([]string, len(q))
		for i, owner := range q {
			channels[i] = n.WaiterChannel(owner)
		}
		listener := newClient()
		var ps *redis.PubSub
		if _, ok := listener.(*redis.ClusterClient); ok {
			ps = listener.SSubscribe(ctx, channels...)
		} else {
			ps = listener.Subscribe(ctx, channels...)
		}
		defer ps.Close()
		for range channels {
			if _, err := ps.Receive(ctx); err != nil { // the confirmations
				t.Fatal(err)
			}
		}

		mustUnlock(t, holder)
		wg.Wait()
		// Everything published so far reaches the listener before the
		// answer to this ping.
		if err := ps.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		woken := map[string]int{}
		for {
			msg, err := ps.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := msg.(*redis.Message); ok {
				woken[m.Channel]++
				continue
			}
			if _, ok := msg.(*redis.Pong); ok {
				break
			}
		}
		for _, ch := range channels {
			if woken[ch] != 1 {
				t.Fatalf("wake-ups per channel: %v; want exactly one on each of %v", woken, channels)
			}
		}
		if len(woken) != len(channels) {
			t.Fatalf("wake-ups on other channels: %v", woken)
		}
		assertNoKeys(t, admin, name)
	})
}

// TestForceUnlock: a force unlock ends the holder's hold (Done closes) and
// hands the lock to the waiter first in line.
func TestForceUnlock(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		var lost atomic.Int32
		holder := fairlock.New(newClient(), name, fairlock.WithWatchdogTimeout(time.Second),
			fairlock.WithOnLost(func(err error) {
				if !errors.Is(err, fairlock.ErrLost) {
					t.Errorf("loss hook error %v does not match ErrLost", err)
				}
				lost.Add(1)
			}))
		mustLock(t, holder)
		waiter := fairlock.New(newClient(), name)
		done := make(chan error, 1)
		go func() { done <- waiter.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 1 })
		if ok, err := fairlock.New(admin, name).ForceUnlock(ctx); !ok || err != nil {
			t.Fatalf("ForceUnlock = %v, %v", ok, err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second):
			t.Fatal("waiter not handed the lock after ForceUnlock")
		}
		select {
		case <-holder.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("holder's Done still open after ForceUnlock")
		}
		if err := holder.Unlock(ctx); !errors.Is(err, fairlock.ErrNotHeld) {
			t.Fatalf("Unlock after ForceUnlock = %v, want ErrNotHeld", err)
		}
		// The hook runs just after Done closes.
		redistest.WaitFor(t, 2*time.Second, func() bool { return lost.Load() == 1 })
		mustUnlock(t, waiter)
		assertNoKeys(t, admin, name)
	})
}

// TestFencing: tokens strictly increase across handles and clients.
func TestFencing(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		name := redistest.UniqueName(t)
		var last uint64
		for i := range 5 {
			m := fairlock.New(newClient(), name, fairlock.WithFencing())
			mustLock(t, m)
			if tok := m.Token(); tok <= last {
				t.Fatalf("hold %d: token %d not above %d", i, tok, last)
			}
			last = m.Token()
			mustUnlock(t, m)
		}
	})
}

// TestLockDeadlineLeavesNothing: a Lock that times out leaves no place in
// line, no subscription and no goroutine.
func TestLockDeadlineLeavesNothing(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	admin := srv.NewClient(t)
	holder := fairlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	defer mustUnlock(t, holder)
	waiterClient := srv.NewClient(t)
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	lockErr := make(chan error, 1)
	go func() { lockErr <- fairlock.New(waiterClient, name).Lock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 1 })
	q, _ := line(t, admin, name)
	ch := keyspace.NewNames(name).WaiterChannel(q[0])
	err := <-lockErr
	if d := time.Since(start); d < 300*time.Millisecond || d > 1500*time.Millisecond {
		t.Fatalf("Lock returned after %v, want about 300ms", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
	}
	perclient.AwaitTidied(t.Context()) // the place in line is left in the background
	if q, z := line(t, admin, name); len(q)+len(z) != 0 {
		t.Fatalf("line %v, deadlines %v left behind", q, z)
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 0 })
	redistest.VerifyNone(t, ignore)
}

// TestWaiterSurvivesPubSubKill: with its pub/sub connection killed, the
// first waiter still gets the lock, in turn, soon after the release.
func TestWaiterSurvivesPubSubKill(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	admin := srv.NewClient(t)
	holder := fairlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	waiters := handles(2, func() redis.UniversalClient { return srv.NewClient(t) }, name)
	got := queueUp(t, admin, name, waiters)
	q, _ := line(t, admin, name)
	ch := keyspace.NewNames(name).WaiterChannel(q[0])
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 1 })
	if err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	mustUnlock(t, holder)
	// The wake-up may be lost with the connection; the reconnect wakes
	// every waiter, and sleeps are bounded by 3.3s anyway.
	if d := inTurn(t, got, waiters).Sub(released); d > 4*time.Second {
		t.Fatalf("first waiter took %v after the release", d)
	}
	assertNoKeys(t, admin, name)
}
