package fairlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
)

// Integration tier: every test runs on a real redis-server and on a real
// 3-master cluster, both started by the tests.

// TestOrdering: 8 waiters on 8 clients join the line 20ms apart while the
// lock is held, and get it in exactly that order; 5 rounds.
func TestOrdering(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		clients := make([]redis.UniversalClient, 8)
		for i := range clients {
			clients[i] = newClient()
		}
		holder := fairlock.New(admin, name)
		for round := range 5 {
			mustLock(t, holder)
			var (
				mu    sync.Mutex
				order []int
				wg    sync.WaitGroup
			)
			next := time.Now()
			for i, c := range clients {
				time.Sleep(time.Until(next)) // pacing, not synchronisation
				next = time.Now().Add(20 * time.Millisecond)
				m := fairlock.New(c, name)
				wg.Go(func() {
					if err := m.Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					if err := m.Unlock(ctx); err != nil {
						t.Error(err)
					}
				})
				// Arrival is joining the line: wait for it, so that a
				// goroutine scheduled late on a loaded machine cannot
				// arrive out of turn.
				redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == i+1 })
			}
			mustUnlock(t, holder)
			wg.Wait()
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
				t.Fatalf("round %d: acquired in order %v, want %v", round, order, want)
			}
		}
		assertNoKeys(t, admin, name)
	})
}

// TestNoBarging: while 3 waiters are in line and the lock is free, a
// TryLock from a fourth handle returns false.
func TestNoBarging(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)
		g := &gate{}
		defer g.reopen()
		waiters := handles(3, func() redis.UniversalClient {
			c := newClient()
			c.AddHook(g)
			return c
		}, name)
		got := queueUp(t, admin, name, waiters)
		// Hold the waiters back, so that the lock stays free after the
		// release for as long as the test needs.
		g.shutAndDrain(t)
		mustUnlock(t, holder)
		other := fairlock.New(newClient(), name)
		if ok, err := other.TryLock(ctx); ok || err != nil {
			t.Fatalf("TryLock with 3 waiters in line = %v, %v; want false", ok, err)
		}
		if locked, err := other.IsLocked(ctx); locked || err != nil {
			t.Fatalf("IsLocked = %v, %v: the lock should have been free for TryLock", locked, err)
		}
		if q, _ := line(t, admin, name); len(q) != 3 {
			t.Fatalf("TryLock changed the line to %v", q)
		}
		g.reopen()
		inTurn(t, got, waiters)
		assertNoKeys(t, admin, name)
	})
}

// TestCancelledWaiter: a waiter whose ctx deadline passes leaves the line
// before Lock returns, and the waiter behind it gets the lock on the next
// release without delay.
func TestCancelledWaiter(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)

		first := fairlock.New(newClient(), name)
		firstCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		firstErr := make(chan error, 1)
		go func() { firstErr <- first.Lock(firstCtx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 1 })
		q, _ := line(t, admin, name)
		firstOwner := q[0]

		second := fairlock.New(newClient(), name)
		secondAt := make(chan time.Time, 1)
		go func() {
			if err := second.Lock(ctx); err != nil {
				t.Error(err)
			}
			secondAt <- time.Now()
		}()
		redistest.WaitFor(t, 5*time.Second, func() bool {
			q, _ := line(t, admin, name)
			return len(q) > 0 && q[len(q)-1] != firstOwner
		})

		err := <-firstErr
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 1500*time.Millisecond {
			t.Fatalf("Lock returned after %v, want about 200ms", d)
		}
		q, z := line(t, admin, name)
		if len(q) != 1 || len(z) != 1 || q[0] == firstOwner || z[0] != q[0] {
			t.Fatalf("after the cancelled Lock: line %v, deadlines %v; want only the second waiter (not %s)", q, z, firstOwner)
		}

		released := time.Now()
		mustUnlock(t, holder)
		select {
		case at := <-secondAt:
			// Without a wake-up it would sleep a third of the waiter
			// timeout (3.3s).
			if d := at.Sub(released); d > time.Second {
				t.Fatalf("second waiter acquired %v after the release", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("second waiter did not acquire")
		}
		mustUnlock(t, second)
		assertNoKeys(t, admin, name)
	})
}

// TestDeadWaiter: a waiter whose client is closed mid-wait cannot leave the
// line; it is dropped after its waiter timeout, and the waiter behind it
// gets the lock within about that time of the release.
func TestDeadWaiter(t *testing.T) {
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)

		doomed := newClient()
		dead := fairlock.New(doomed, name, fairlock.WithWaiterTimeout(time.Second))
		deadErr := make(chan error, 1)
		go func() { deadErr <- dead.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 1 })

		next := fairlock.New(newClient(), name, fairlock.WithWaiterTimeout(time.Second))
		nextAt := make(chan time.Time, 1)
		go func() {
			if err := next.Lock(ctx); err != nil {
				t.Error(err)
			}
			nextAt <- time.Now()
		}()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 2 })

		_ = doomed.Close() // the waiter's process "dies": no refresh, no leave
		if err := <-deadErr; err == nil {
			t.Fatal("Lock on a closed client succeeded")
		}
		if q, _ := line(t, admin, name); len(q) != 2 {
			t.Fatalf("line = %v, want the dead waiter still in it", q)
		}

		released := time.Now()
		mustUnlock(t, holder) // wakes the dead waiter, which never comes
		select {
		case at := <-nextAt:
			// The dead waiter last refreshed its place before the
			// release, so it is dropped within 1s of it.
			if d := at.Sub(released); d > 1500*time.Millisecond {
				t.Fatalf("next waiter acquired %v after the release, want about 1s", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("next waiter did not acquire: the dead waiter blocks the line")
		}
		mustUnlock(t, next)
		assertNoKeys(t, admin, name)
	})
}

// TestLongHold: a holder keeps the lock for 15s through the watchdog while
// 3 waiters with the default 10s waiter timeout wait; none is dropped, and
// they acquire in order.
func TestLongHold(t *testing.T) {
	if testing.Short() {
		t.Skip("15s hold")
	}
	t.Parallel()
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		t.Parallel()
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)
		waiters := handles(3, newClient, name)
		got := queueUp(t, admin, name, waiters)
		want, _ := line(t, admin, name)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		timeouts := internal.NewNames(name).Timeouts()
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); <-tick.C {
			if q, z := line(t, admin, name); !slices.Equal(q, want) || len(z) != 3 {
				t.Fatalf("line changed to %v (deadlines %v) while the holder held, want %v", q, z, want)
			}
			// Refreshed every third of the 10s timeout: a deadline never
			// comes closer than about 6.7s.
			now, err := admin.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			deadlines, err := admin.ZRangeWithScores(ctx, timeouts, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range deadlines {
				if left := time.Duration(d.Score)*time.Millisecond - time.Duration(now.UnixNano()); left < 5*time.Second {
					t.Fatalf("waiter %v has %v left before it is dropped: its place is not refreshed", d.Member, left)
				}
			}
			select {
			case <-holder.Done():
				t.Fatal("holder lost the lock")
			case i := <-got:
				t.Fatalf("waiter %d acquired while the lock was held", i)
			default:
			}
		}
		mustUnlock(t, holder)
		inTurn(t, got, waiters)
		assertNoKeys(t, admin, name)
	})
}

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
		n := internal.NewNames(name)
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
	ch := internal.NewNames(name).WaiterChannel(q[0])
	err := <-lockErr
	if d := time.Since(start); d < 300*time.Millisecond || d > 1500*time.Millisecond {
		t.Fatalf("Lock returned after %v, want about 300ms", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
	}
	if q, z := line(t, admin, name); len(q)+len(z) != 0 {
		t.Fatalf("line %v, deadlines %v left behind", q, z)
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 0 })
	goleak.VerifyNone(t, ignore)
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
	ch := internal.NewNames(name).WaiterChannel(q[0])
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
