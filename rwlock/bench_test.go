package rwlock_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// BenchmarkRLockRUnlock measures one uncontended read cycle on a real
// redis-server: two script round trips.
func BenchmarkRLockRUnlock(b *testing.B) {
	rw := rwlock.New(redistest.SharedServer(b).NewClient(b), redistest.UniqueName(b))
	ctx := b.Context()
	for b.Loop() {
		if err := rw.RLock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := rw.RUnlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReaders measures the throughput of 1 and of 8 concurrent
// readers, each with its own handle on one client, taking and releasing
// read holds of one lock. Readers do not exclude each other, so 8 of them
// should get through several times as many cycles per second as one.
func BenchmarkReaders(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run("readers="+strconv.Itoa(n), func(b *testing.B) {
			rdb := redistest.SharedServer(b).NewClient(b)
			name := redistest.UniqueName(b)
			ctx := b.Context()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range n {
				rw := rwlock.New(rdb, name)
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := rw.RLock(ctx); err != nil {
							b.Error(err)
							return
						}
						if err := rw.RUnlock(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}
