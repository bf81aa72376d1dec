package faulttest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 5: CLIENT PAUSE WRITE for 2s. Lock calls time out with errors
// matching context.DeadlineExceeded instead of hanging; an Unlock is not
// abandoned because its ctx ended, and reports what happened once the
// pause is over, within its own bound; a holder whose lease cannot be
// renewed during the pause sees Done close, and no two holders ever
// overlap.
func TestClientPauseWrite(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const (
			lease   = time.Second
			pause   = 2 * time.Second
			workers = 4
			callTTL = 400 * time.Millisecond // ctx of each Lock and Unlock
		)
		srv := redistest.Start(t)
		admin := srv.NewClient(t)
		// go-redis bounds a command by ctx's deadline only with
		// ContextTimeoutEnabled; without it a command blocked by the pause
		// waits up to ReadTimeout (3s by default) whatever ctx says.
		ctxClient := func() *redis.Client {
			return srv.NewClient(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
		}
		name := redistest.UniqueName(t)

		// Holders of two other locks: one to unlock during the pause, one
		// left alone, whose renewals the pause blocks.
		other := p.new(ctxClient(), redistest.UniqueName(t), lease)
		idle := p.new(ctxClient(), redistest.UniqueName(t), lease)
		for _, l := range []locker{other, idle} {
			if err := l.Lock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}

		x := newExclusion()
		var timeouts atomic.Int64
		start := time.Now()
		end := start.Add(pause + 2*time.Second)
		var wg sync.WaitGroup
		for range workers {
			l := p.new(ctxClient(), name, lease)
			wg.Go(func() {
				for time.Now().Before(end) {
					ctx, cancel := context.WithTimeout(t.Context(), callTTL)
					err := l.Lock(ctx)
					cancel()
					if err != nil {
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("Lock during the pause: %v, want an error matching context.DeadlineExceeded", err)
						}
						timeouts.Add(1)
						continue
					}
					v := x.enter(t, l)
					time.Sleep(5 * time.Millisecond)
					x.leave(t, l, v)
					ctx, cancel = context.WithTimeout(t.Context(), callTTL)
					err = l.Unlock(ctx)
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) && !p.notHeld(err) {
						t.Errorf("Unlock during the pause: %v", err)
					}
				}
			})
		}

		time.Sleep(500 * time.Millisecond) // let the workers take turns first
		before := x.completed.Load()
		if err := admin.Do(t.Context(), "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()

		ctx, cancel := context.WithTimeout(t.Context(), callTTL)
		err := other.Unlock(ctx)
		cancel()
		// The lease ran out during the pause: the release finds the lock
		// gone once Redis answers again, and says so.
		if took := time.Since(paused); err != nil && !p.notHeld(err) || took < callTTL || took > pause+time.Second {
			t.Errorf("Unlock during the pause returned %v after %v, want nil or not held, after the pause (%v)", err, took, pause)
		}
		if !isClosed(other.Done()) {
			t.Error("Done open after the last Unlock failed: the lease would still be renewed")
		}
		select {
		case <-idle.Done():
			d := time.Since(paused)
			if d < lease*2/3-100*time.Millisecond {
				t.Errorf("the paused holder's Done closed %v into the pause, before its lease could run out", d)
			}
		case <-time.After(pause):
			t.Error("the holder's Done stayed open through a pause longer than its lease")
		}
		wg.Wait()
		t.Logf("%d critical sections (%d before the pause), %d calls timed out", x.completed.Load(), before, timeouts.Load())
		if timeouts.Load() == 0 {
			t.Error("no Lock timed out: the pause did not block the workers")
		}
		if x.completed.Load() <= before {
			t.Error("no critical section completed after the pause")
		}
		if n := x.violations.Load(); n != 0 {
			t.Errorf("%d overlapping holds", n)
		}
	})
}
