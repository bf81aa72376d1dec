package faulttest_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 4: every pub/sub connection is killed every 200ms while 100
// waiters churn on one lock. Every waiter acquires, and the lock never
// stays free longer than the holder's lease while someone waits: a lost
// notification costs at most a lease.
func TestPubSubKilledRepeatedly(t *testing.T) {
	forEach(t, func(t *testing.T, p primitive) {
		const (
			lease   = time.Second
			waiters = 100
			clients = 4
			rounds  = 5
		)
		srv := redistest.Start(t)
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		rdbs := make([]*redis.Client, clients)
		for i := range rdbs {
			rdbs[i] = srv.NewClient(t)
		}

		stop := make(chan struct{})
		var kills atomic.Int64
		var killer sync.WaitGroup
		killer.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if err := admin.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err == nil {
						kills.Add(1)
					}
				}
			}
		})

		x := newExclusion()
		var (
			gapMu   sync.Mutex
			freedAt time.Time     // when the last holder released
			maxGap  time.Duration // longest free stretch before the next acquire
		)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		var done atomic.Int64
		for i := range waiters {
			l := p.new(rdbs[i%clients], name, lease)
			wg.Go(func() {
				for range rounds {
					if err := l.Lock(ctx); err != nil {
						t.Errorf("waiter %d: %v", i, err)
						return
					}
					gapMu.Lock()
					if !freedAt.IsZero() {
						maxGap = max(maxGap, time.Since(freedAt))
					}
					gapMu.Unlock()
					v := x.enter(t, l)
					time.Sleep(time.Millisecond)
					x.leave(t, l, v)
					gapMu.Lock()
					freedAt = time.Now()
					gapMu.Unlock()
					if err := l.Unlock(ctx); err != nil {
						t.Errorf("waiter %d unlock: %v", i, err)
						return
					}
				}
				done.Add(1)
			})
		}
		wg.Wait()
		close(stop)
		killer.Wait()
		t.Logf("%d waiters x %d rounds through %d pub/sub kills; longest free stretch %v",
			done.Load(), rounds, kills.Load(), maxGap.Round(time.Millisecond))
		if n := done.Load(); n != waiters {
			t.Fatalf("%d of %d waiters finished", n, waiters)
		}
		if kills.Load() < 3 {
			t.Errorf("only %d pub/sub kills happened; the test did not exercise the fault", kills.Load())
		}
		if maxGap > lease+500*time.Millisecond {
			t.Errorf("the lock stayed free %v while waiters waited, more than the lease %v", maxGap, lease)
		}
		if got, want := x.completed.Load(), int64(waiters*rounds); got != want {
			t.Errorf("%d critical sections completed, want %d", got, want)
		}
	})
}
