package faulttest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 3: Redis is shut down (SHUTDOWN NOSAVE, so the locks are gone) and
// started again on the same port. Holders see Done close; blocked waiters
// acquire after the restart, or return an error matching their ctx's when
// it ends first; nothing leaks; new locks work without a new client.
func TestRedisRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		down time.Duration // how long Redis stays down
	}{
		{"quick restart", 0}, // holders learn from their next renewal
		{"outage past the lease", 2500 * time.Millisecond}, // holders time out locally
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachLeased(t, func(t *testing.T, p primitive) { testRestart(t, p, tc.down) })
		})
	}
}

func testRestart(t *testing.T, p primitive, down time.Duration) {
	const lease = time.Second
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after every other cleanup (servers,
	// clients) of the test.
	t.Cleanup(func() { redistest.VerifyNone(t, ignore) })
	srv := redistest.Start(t)
	name := redistest.UniqueName(t)
	holderRDB, waiterRDB := srv.NewClient(t), srv.NewClient(t)
	holder := p.new(holderRDB, name, lease)
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Three waiters that wait through the outage, one whose ctx ends in it.
	const waiters = 3
	var wg sync.WaitGroup
	acquired := make(chan locker, waiters)
	for range waiters {
		w := p.new(waiterRDB, name, lease)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := w.Lock(ctx); err != nil {
				t.Errorf("waiter: %v", err)
				return
			}
			acquired <- w
		})
	}
	shortErr := make(chan error, 1)
	shortCtx, cancelShort := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancelShort()
	short := p.new(waiterRDB, name, lease)
	wg.Go(func() { shortErr <- short.Lock(shortCtx) })
	redistest.WaitFor(t, 5*time.Second, func() bool {
		return redistest.ClientCount(t, srv.NewClient(t), "pubsub") >= 1
	})

	doneAt := make(chan time.Time, 1)
	go func() {
		<-holder.Done()
		doneAt <- time.Now()
	}()
	shutdown := time.Now()
	srv.Shutdown()
	if down > 0 {
		outage := time.NewTimer(down)
		select {
		case <-outage.C:
		case <-holder.Done():
			// Renewals fail while Redis is down: the hold is lost when its
			// local validity ends, not before.
			if d := time.Since(shutdown); d < lease*2/3-100*time.Millisecond {
				t.Errorf("holder's Done closed %v into the outage, before its lease could run out", d)
			}
			<-outage.C
		}
	}
	restarting := time.Now()
	srv.Restart(t)
	restarted := time.Now()

	select {
	case at := <-doneAt:
		d := at.Sub(shutdown)
		t.Logf("holder's Done closed %v after the shutdown", d.Round(time.Millisecond))
		if d > lease+time.Second {
			t.Errorf("holder's Done closed %v after the shutdown, want within the lease + 1s", d)
		}
	case <-time.After(lease + time.Second):
		t.Fatal("holder's Done did not close after Redis lost its lock")
	}
	shortDeadline, _ := shortCtx.Deadline()
	switch err := <-shortErr; {
	case err == nil && restarting.Before(shortDeadline):
		// Redis was back before its ctx ended: it may fairly have won.
		if err := short.Unlock(t.Context()); err != nil {
			t.Errorf("short waiter's unlock: %v", err)
		}
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("waiter whose ctx ended during the outage: %v, want an error matching context.DeadlineExceeded", err)
	}
	for range waiters {
		select {
		case w := <-acquired:
			if err := w.Unlock(t.Context()); err != nil {
				t.Errorf("waiter unlock: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter did not acquire after the restart")
		}
	}
	wg.Wait()
	t.Logf("all waiters acquired within %v of the restart", time.Since(restarted).Round(time.Millisecond))
	if err := holder.Unlock(t.Context()); !p.notHeld(err) {
		t.Errorf("Unlock of the lost hold = %v, want not held", err)
	}

	// The same clients work for new locks.
	fresh := p.new(holderRDB, redistest.UniqueName(t), lease)
	if err := fresh.Lock(t.Context()); err != nil {
		t.Fatalf("Lock after the restart: %v", err)
	}
	if err := fresh.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}
