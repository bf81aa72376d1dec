package semaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// The benchmarks run on the shared real redis-server and report, besides
// time, the Redis commands per acquisition from INFO commandstats deltas:
// cmds/op counts every command the server ran (those run by scripts
// included), scripts/op the script calls (round trips) alone.

// BenchmarkSemaphore is Acquire(1)+Release(1) of a counting semaphore.
func BenchmarkSemaphore(b *testing.B) {
	benchmarkPair(b, func(ctx context.Context, rdb redis.UniversalClient, name string, permits int64) (func() error, error) {
		s := semaphore.New(rdb, name)
		return func() error {
			if err := s.Acquire(ctx, 1); err != nil {
				return err
			}
			return s.Release(ctx, 1)
		}, s.SetPermits(ctx, permits)
	})
}

// BenchmarkLeased is Acquire(0)+Release of a leased semaphore: permits kept
// alive by the watchdog.
func BenchmarkLeased(b *testing.B) {
	benchmarkPair(b, func(ctx context.Context, rdb redis.UniversalClient, name string, permits int64) (func() error, error) {
		l := semaphore.NewLeased(rdb, name)
		return func() error {
			id, err := l.Acquire(ctx, 0)
			if err != nil {
				return err
			}
			return l.Release(ctx, id)
		}, l.SetPermits(ctx, permits)
	})
}

// pairFunc returns an acquire+release of the semaphore called name on rdb,
// after setting its permits.
type pairFunc func(ctx context.Context, rdb redis.UniversalClient, name string, permits int64) (func() error, error)

// benchmarkPair measures acquire+release uncontended (one goroutine, one
// permit) and contended (16 goroutines over 4 clients, 4 permits).
func benchmarkPair(b *testing.B, pair pairFunc) {
	srv := redistest.SharedServer(b)
	admin := srv.NewClient(b)
	for _, c := range []struct {
		name                       string
		permits, clients, routines int
	}{
		{"uncontended", 1, 1, 1},
		{"contended-16x4", 4, 4, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := b.Context()
			name := redistest.UniqueName(b)
			var ops []func() error
			for range c.clients {
				rdb := srv.NewClient(b)
				for range c.routines {
					op, err := pair(ctx, rdb, name, int64(c.permits))
					if err != nil {
						b.Fatal(err)
					}
					ops = append(ops, op)
				}
			}
			total0, scripts0 := commandCalls(b, admin)
			b.ResetTimer()
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			for _, op := range ops {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := op(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			total1, scripts1 := commandCalls(b, admin)
			// The first INFO counts in the second snapshot.
			b.ReportMetric(float64(total1-total0-1)/float64(b.N), "cmds/op")
			b.ReportMetric(float64(scripts1-scripts0)/float64(b.N), "scripts/op")
		})
	}
}
