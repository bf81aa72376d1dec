package semaphore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Integration and cluster tiers: every test runs on a real redis-server and
// on a real 3-master cluster.

// TestMutualExclusion uses one permit as a mutex: 8 clients x 8 goroutines
// x 25 rounds of an unprotected read-modify-write of a Redis counter.
func TestMutualExclusion(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		if err := semaphore.New(d.admin, name).SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		counter := "counter:{" + name + "}"
		hammer(t, d, 8, 8, 25, func(rdb redis.UniversalClient) func() error {
			s := semaphore.New(rdb, name)
			return func() error {
				if err := s.Acquire(ctx, 1); err != nil {
					return err
				}
				if err := increment(ctx, rdb, counter); err != nil {
					return err
				}
				return s.Release(ctx, 1)
			}
		})
		if got, _ := d.admin.Get(ctx, counter).Int(); got != 8*8*25 {
			t.Fatalf("counter = %d, want %d: mutual exclusion violated", got, 8*8*25)
		}
		wantAvailable(t, semaphore.New(d.admin, name), 1)
	})
}

// TestLeasedMutualExclusion is TestMutualExclusion with a Leased permit
// kept by the watchdog.
func TestLeasedMutualExclusion(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		if err := semaphore.NewLeased(d.admin, name).SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		counter := "counter:{" + name + "}"
		hammer(t, d, 4, 4, 20, func(rdb redis.UniversalClient) func() error {
			l := semaphore.NewLeased(rdb, name)
			return func() error {
				id, err := l.Acquire(ctx, 0)
				if err != nil {
					return err
				}
				if err := increment(ctx, rdb, counter); err != nil {
					return err
				}
				return l.Release(ctx, id)
			}
		})
		if got, _ := d.admin.Get(ctx, counter).Int(); got != 4*4*20 {
			t.Fatalf("counter = %d, want %d: mutual exclusion violated", got, 4*4*20)
		}
		wantLeasedAvailable(t, semaphore.NewLeased(d.admin, name), 1)
	})
}

// TestAtMostPermitsHolders observes the number of holders inside with a
// gauge in Redis: with 5 permits it never exceeds 5 over 2000 acquisitions
// from 4 clients.
func TestAtMostPermitsHolders(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		if err := semaphore.New(d.admin, name).SetPermits(ctx, 5); err != nil {
			t.Fatal(err)
		}
		gauge := "gauge:{" + name + "}"
		var most atomic.Int64
		hammer(t, d, 4, 5, 100, func(rdb redis.UniversalClient) func() error {
			s := semaphore.New(rdb, name)
			return func() error {
				if err := s.Acquire(ctx, 1); err != nil {
					return err
				}
				n, err := rdb.Incr(ctx, gauge).Result()
				if err != nil {
					return err
				}
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if err := rdb.Decr(ctx, gauge).Err(); err != nil {
					return err
				}
				return s.Release(ctx, 1)
			}
		})
		if m := most.Load(); m > 5 || m < 2 {
			t.Fatalf("at most %d holders inside at once, want 2..5", m)
		}
		t.Logf("at most %d holders inside at once", most.Load())
		wantAvailable(t, semaphore.New(d.admin, name), 5)
	})
}

// TestWokenByRelease: Acquire(4) waits while 2 are available and completes
// promptly after Release(2); AddPermits wakes waiters as well.
func TestWokenByRelease(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		// A poll interval longer than the test: only a notification can
		// wake the waiter in time.
		s := semaphore.New(d.newClient(t), name, semaphore.WithPollInterval(time.Minute))
		if err := s.SetPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		done := make(chan time.Time, 1)
		go func() {
			if err := s.Acquire(ctx, 4); err != nil {
				t.Error(err)
			}
			done <- time.Now()
		}()
		waitSubscribed(t, d, name, 1)
		select {
		case <-done:
			t.Fatal("Acquire(4) returned with 2 available")
		case <-time.After(100 * time.Millisecond):
		}
		releaser := semaphore.New(d.newClient(t), name)
		start := time.Now()
		mustRelease(t, releaser, 2)
		if d := (<-done).Sub(start); d > time.Second {
			t.Fatalf("Acquire(4) completed %v after Release(2), want within a second", d)
		}
		wantAvailable(t, releaser, 0)

		go func() {
			if err := s.Acquire(ctx, 1); err != nil {
				t.Error(err)
			}
			done <- time.Now()
		}()
		waitSubscribed(t, d, name, 1)
		start = time.Now()
		if err := releaser.AddPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if d := (<-done).Sub(start); d > time.Second {
			t.Fatalf("Acquire(1) completed %v after AddPermits(1), want within a second", d)
		}
	})
}

// TestWakesAsManyAsAvailable: a release wakes as many waiters of a process
// as permits are available, not all of them and not only one.
func TestWakesAsManyAsAvailable(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx, cancel := context.WithCancel(t.Context())
		releaser := semaphore.New(d.newClient(t), name)
		// Load the release and drain scripts on the node before counting.
		mustRelease(t, releaser, 1)
		if _, err := releaser.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		rdb := d.newClient(t)
		parks := redistest.CountParks(t, rdb)
		acquired := make(chan struct{}, 4)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		for range 4 {
			wg.Go(func() {
				s := semaphore.New(rdb, name, semaphore.WithPollInterval(time.Minute))
				if err := s.Acquire(ctx, 1); err == nil {
					acquired <- struct{}{}
				}
			})
		}
		// Every waiter made its last attempt and sleeps.
		redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == 4 })
		_, before := commandCalls(t, d.admin)
		mustRelease(t, releaser, 2)
		for range 2 {
			select {
			case <-acquired:
			case <-time.After(time.Second):
				t.Fatal("Release(2) did not wake two waiters")
			}
		}
		select {
		case <-acquired:
			t.Fatal("Release(2) let a third waiter acquire")
		case <-time.After(200 * time.Millisecond):
		}
		_, after := commandCalls(t, d.admin)
		// The release and two woken attempts; waking the herd would be five.
		if n := after - before; n != 3 {
			t.Fatalf("%d scripts ran for Release(2) with 4 waiters, want 3", n)
		}
	})
}

// TestWakeUpFitsRequests: a release wakes the local waiter whose request
// fits in what it freed, passing over an earlier one that needs more, and
// the one that needs more is woken once enough are free.
func TestWakeUpFitsRequests(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx, cancel := context.WithCancel(t.Context())
		rdb := d.newClient(t)
		parks := redistest.CountParks(t, rdb)
		releaser := semaphore.New(d.newClient(t), name)
		// Load the release script on the node before counting.
		mustRelease(t, releaser, 1)
		if _, err := releaser.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		// Notifications only: the poll interval is far beyond the test.
		poll := semaphore.WithPollInterval(time.Minute)
		big, small := semaphore.New(rdb, name, poll), semaphore.New(rdb, name, poll)
		bigDone := make(chan error, 1)
		go func() { bigDone <- big.Acquire(ctx, 4) }() // first in line: it subscribed first
		defer func() {
			cancel()
			<-bigDone
		}()
		waitSubscribed(t, d, name, 1)
		smallDone := make(chan error, 1)
		go func() { smallDone <- small.Acquire(ctx, 1) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == 2 })
		_, before := commandCalls(t, d.admin)
		mustRelease(t, releaser, 1)
		select {
		case err := <-smallDone:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Release(1) did not serve the waiter for 1 behind a waiter for 4")
		}
		redistest.WaitFor(t, 5*time.Second, func() bool { return idle(t, d.admin, 50*time.Millisecond) })
		if _, after := commandCalls(t, d.admin); after-before != 2 {
			t.Fatalf("%d scripts ran for Release(1), want 2: the release and the waiter for 1 (the waiter for 4 is not woken)", after-before)
		}
		select {
		case err := <-bigDone:
			t.Fatalf("Acquire(4) returned %v with one permit released", err)
		default:
		}
		mustRelease(t, releaser, 3) // 3 free: still not enough for 4
		redistest.WaitFor(t, 5*time.Second, func() bool { return idle(t, d.admin, 50*time.Millisecond) })
		select {
		case err := <-bigDone:
			t.Fatalf("Acquire(4) returned %v with three permits free", err)
		default:
		}
		mustRelease(t, releaser, 1)
		select {
		case err := <-bigDone:
			if err != nil {
				t.Fatal(err)
			}
			bigDone <- nil // for the deferred receive
		case <-time.After(5 * time.Second):
			t.Fatal("Acquire(4) not served once four permits were free")
		}
	})
}

// TestRedissonChecks, TestZeroAndNegative and the wrong-type tests run the
// shared checks on real Redis.
func TestRedissonChecks(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		redissonChecks(t, d.newClient(t), redistest.UniqueName(t))
	})
}

func TestZeroAndNegative(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		zeroAndNegative(t, d.newClient(t), redistest.UniqueName(t))
	})
}

func TestWrongType(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		rdb := d.newClient(t)
		wrongType(t, rdb, redistest.UniqueName(t))
		leasedWrongType(t, rdb, redistest.UniqueName(t))
	})
}

// TestLeasedLeases: with 2 permits a third TryAcquire fails; a permit whose
// 1s lease runs out returns to the pool; Renew extends a live permit and
// fails on an expired one.
func TestLeasedLeases(t *testing.T) {
	redistest.Long(t)
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		l := semaphore.NewLeased(d.newClient(t), name)
		if err := l.SetPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		short := mustTryAcquireLeased(t, l, time.Second)
		long := mustTryAcquireLeased(t, l, 2*time.Second)
		start := time.Now()
		if _, ok, err := l.TryAcquire(ctx, time.Second); ok || err != nil {
			t.Fatalf("third TryAcquire of 2 permits = %v, %v; want false", ok, err)
		}
		// Renew the long permit now and again while the short one runs out.
		if ok, err := l.Renew(ctx, long, 5*time.Second); !ok || err != nil {
			t.Fatalf("Renew of a live permit = %v, %v", ok, err)
		}
		other := semaphore.NewLeased(d.newClient(t), name)
		third, err := other.Acquire(ctx, time.Minute) // waits for the short permit
		if err != nil {
			t.Fatal(err)
		}
		if e := time.Since(start); e < 900*time.Millisecond || e > 2500*time.Millisecond {
			t.Fatalf("Acquire took %v, want about the 1s lease", e)
		}
		if ok, err := l.Renew(ctx, short, time.Second); ok || err != nil {
			t.Fatalf("Renew of an expired permit = %v, %v; want false", ok, err)
		}
		if err := l.Release(ctx, short); !errors.Is(err, semaphore.ErrNotHeld) {
			t.Fatalf("Release of an expired permit = %v, want ErrNotHeld", err)
		}
		// The long permit outlives its first 2s lease thanks to Renew.
		time.Sleep(time.Until(start.Add(2200 * time.Millisecond)))
		if ok, err := l.Renew(ctx, long, time.Second); !ok || err != nil {
			t.Fatalf("renewed permit gone after its first lease: %v, %v", ok, err)
		}
		wantLeasedAvailable(t, l, 0)
		for _, id := range []string{long, third} {
			if err := other.Release(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		wantLeasedAvailable(t, l, 2)
		if err := l.Release(ctx, "not-a-permit"); !errors.Is(err, semaphore.ErrNotHeld) {
			t.Fatalf("Release of an unknown id = %v, want ErrNotHeld", err)
		}
		wantLeasedAvailable(t, l, 2)
	})
}

// TestLeasedWokenByRelease: a Leased waiter is woken by a release, not by
// its timer.
func TestLeasedWokenByRelease(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		holder := semaphore.NewLeased(d.newClient(t), name)
		if err := holder.SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		id := mustTryAcquireLeased(t, holder, time.Minute)
		waiter := semaphore.NewLeased(d.newClient(t), name, semaphore.WithPollInterval(time.Minute))
		done := make(chan time.Time, 1)
		go func() {
			id, err := waiter.Acquire(ctx, time.Minute)
			if err != nil {
				t.Error(err)
			}
			done <- time.Now()
			_ = waiter.Release(ctx, id)
		}()
		waitSubscribed(t, d, name, 1)
		start := time.Now()
		if err := holder.Release(ctx, id); err != nil {
			t.Fatal(err)
		}
		if d := (<-done).Sub(start); d > time.Second {
			t.Fatalf("waiter acquired %v after Release, want within a second", d)
		}
	})
}

// TestLeasedWatchdog: a lease-0 permit outlives its lease while the process
// lives, and after Release nothing renews it and no goroutine is left.
func TestLeasedWatchdog(t *testing.T) {
	redistest.Long(t)
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		l := semaphore.NewLeased(d.newClient(t), name, semaphore.WithWatchdogTimeout(time.Second))
		if err := l.SetPermits(ctx, 1); err != nil {
			t.Fatal(err)
		}
		ignore := goleak.IgnoreCurrent()
		id, err := l.Acquire(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			wantLeasedAvailable(t, l, 0)
		}
		if err := l.Release(ctx, id); err != nil {
			t.Fatalf("Release after 3 watchdog timeouts = %v", err)
		}
		wantLeasedAvailable(t, l, 1)
		if err := goleak.Find(ignore); err != nil {
			t.Fatal(err)
		}
		// Two renewal periods (333ms) without a script call.
		if !idle(t, d.admin, 700*time.Millisecond) {
			t.Fatal("scripts still run after Release")
		}
	})
}

// TestLeasedCrashedClient: permits of a client closed while holding them
// with lease 0 return within the watchdog timeout plus a second.
func TestLeasedCrashedClient(t *testing.T) {
	redistest.Long(t)
	eachDeployment(t, func(t *testing.T, d deployment) {
		name := redistest.UniqueName(t)
		ctx := t.Context()
		crashing := d.newClient(t)
		l := semaphore.NewLeased(crashing, name, semaphore.WithWatchdogTimeout(time.Second))
		if err := l.SetPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := l.Acquire(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		survivor := semaphore.NewLeased(d.newClient(t), name)
		if _, ok, _ := survivor.TryAcquire(ctx, time.Second); ok {
			t.Fatal("a third permit of 2")
		}
		crashing.Close() // no Release, no renewal
		start := time.Now()
		for range 2 {
			if _, err := survivor.Acquire(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if e := time.Since(start); e > 2*time.Second {
			t.Fatalf("permits of the closed client returned after %v, want within 2s", e)
		}
	})
}

// TestCancelledAcquire: an Acquire whose ctx ends returns
// context.DeadlineExceeded and leaves no permit taken, goroutine or
// subscription behind.
func TestCancelledAcquire(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		t.Run("counting", func(t *testing.T) {
			name := redistest.UniqueName(t)
			s := semaphore.New(d.newClient(t), name)
			if err := s.SetPermits(t.Context(), 2); err != nil {
				t.Fatal(err)
			}
			cancelledAcquire(t, d, name, func(ctx context.Context) error { return s.Acquire(ctx, 3) })
			wantAvailable(t, s, 2)
		})
		t.Run("leased", func(t *testing.T) {
			name := redistest.UniqueName(t)
			l := semaphore.NewLeased(d.newClient(t), name)
			if err := l.SetPermits(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			held := mustTryAcquireLeased(t, l, time.Minute)
			cancelledAcquire(t, d, name, func(ctx context.Context) error {
				_, err := l.Acquire(ctx, 0)
				return err
			})
			if err := l.Release(t.Context(), held); err != nil {
				t.Fatal(err)
			}
			wantLeasedAvailable(t, l, 1)
		})
	})
}

// cancelledAcquire runs acquire, which must block, with a 300ms deadline.
func cancelledAcquire(t *testing.T, d deployment, name string, acquire func(ctx context.Context) error) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := acquire(ctx)
	e := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want context.DeadlineExceeded", err)
	}
	if e < 300*time.Millisecond || e > 800*time.Millisecond {
		t.Fatalf("Acquire returned after %v, want 300-800ms", e)
	}
	redistest.WaitFor(t, 2*time.Second, func() bool { return d.subscribers(t, name) == 0 })
	if err := goleak.Find(ignore); err != nil {
		t.Fatal(err)
	}
}

// hammer runs clients x workers goroutines, each client a connection pool
// of its own, each goroutine calling its op rounds times.
func hammer(t *testing.T, d deployment, clients, workers, rounds int, newOp func(rdb redis.UniversalClient) func() error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers)
	for range clients {
		rdb := d.newClient(t)
		for range workers {
			op := newOp(rdb)
			wg.Go(func() {
				for range rounds {
					if err := op(); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// increment adds one to counter with a read and a write that nothing but
// the semaphore keeps apart.
func increment(ctx context.Context, rdb redis.UniversalClient, counter string) error {
	n, err := rdb.Get(ctx, counter).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return rdb.Set(ctx, counter, n+1, 0).Err()
}

func waitSubscribed(t *testing.T, d deployment, name string, n int64) {
	t.Helper()
	redistest.WaitFor(t, 5*time.Second, func() bool { return d.subscribers(t, name) >= n })
}

// idle reports whether no script ran on the server(s) behind rdb for the
// given time.
func idle(t *testing.T, rdb redis.UniversalClient, during time.Duration) bool {
	_, before := commandCalls(t, rdb)
	time.Sleep(during)
	_, after := commandCalls(t, rdb)
	return after == before
}
