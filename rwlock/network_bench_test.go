package rwlock_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// BenchmarkReadersOverNetwork is BenchmarkReaders with 1ms added to every
// reply, as between hosts. On loopback a single reader is already CPU
// bound (client and server share two cores), so 8 readers can only add
// the idle half of the machine; over a network a reader mostly waits for
// round trips, and readers that do not exclude each other overlap them.
//
//	go test -run '^$' -bench ReadersOverNetwork ./rwlock/
func BenchmarkReadersOverNetwork(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run("readers="+strconv.Itoa(n), func(b *testing.B) {
			px := redistest.NewProxy(b, redistest.SharedServer(b).Addr())
			px.SetLatency(time.Millisecond)
			rdb := px.NewClient(b)
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
