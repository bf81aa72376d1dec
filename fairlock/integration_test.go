package fairlock_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// Integration tier, the line: every test runs on a real redis-server and
// on a real 3-master cluster, both started by the tests.

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

// TestNoBarging: while 3 waiters are in line, the release grants the
// lock to the first of them, and a TryLock from a fourth handle returns
// false even while that waiter has not completed its hold.
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
		// Hold the waiters back, so that none of them runs a script
		// while the test looks.
		g.shutAndDrain(t)
		before, _ := line(t, admin, name)
		mustUnlock(t, holder)
		other := fairlock.New(newClient(), name)
		if ok, err := other.TryLock(ctx); ok || err != nil {
			t.Fatalf("TryLock with 3 waiters in line = %v, %v; want false", ok, err)
		}
		// The release granted the lock to the first waiter in line: its
		// hold id names it.
		h := redistest.Holders(ctx, admin, keyspace.NewNames(name).Lock())
		if len(h) != 1 || script.OwnerOf(slices.Collect(maps.Keys(h))[0]) != before[0] {
			t.Fatalf("holders %v: the release should have granted the lock to the first waiter, %s", h, before[0])
		}
		if q, _ := line(t, admin, name); !slices.Equal(q, before[1:]) {
			t.Fatalf("line after the grant and TryLock = %v, want %v", q, before[1:])
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
		perclient.AwaitTidied(t.Context()) // the place in line is left in the background
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
// line; the release grants it the lock all the same (its deadline, 10s by
// default, has not passed), and the waiter behind it gets the lock when
// the grant lease has run out: well within 6s of the release, not the
// waiter timeout.
func TestDeadWaiter(t *testing.T) {
	redistest.Long(t)
	backends(t, func(t *testing.T, newClient func() redis.UniversalClient) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		admin := newClient()
		holder := fairlock.New(admin, name)
		mustLock(t, holder)

		doomed := newClient()
		dead := fairlock.New(doomed, name)
		deadErr := make(chan error, 1)
		go func() { deadErr <- dead.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == 1 })

		next := fairlock.New(newClient(), name)
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
		mustUnlock(t, holder) // grants the lock to the dead waiter, which never comes
		select {
		case at := <-nextAt:
			// The grant lease, then at most a third of it until the next
			// waiter's attempt finds the lock free.
			if d := at.Sub(released); d > 6*time.Second {
				t.Fatalf("next waiter acquired %v after the release, want under 6s (grant lease %v)", d, hold.GrantLease)
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
		timeouts := keyspace.NewNames(name).Timeouts()
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
