package rlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Benchmarks on a real redis-server:
//
//	go test -run '^$' -bench . ./rlock/
//
// They report round trips counted on the client ("roundtrips/op"), which
// does not depend on the machine, and for the handoff the latency in units
// of a round trip made under the same conditions: a PING from a client
// that has been idle as long as the parked waiter. (A client waking from
// idle pays several times what one in a tight loop does, so a PING loop
// is the wrong yardstick.)
// The bench module (cd bench && go run .) compares with other libraries.

func BenchmarkLockUnlock(b *testing.B) {
	rdb := redistest.SharedServer(b).NewClient(b)
	rt := redistest.CountTraffic(rdb)
	ctx := context.Background()
	m := rlock.New(rdb, redistest.UniqueName(b))
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.RoundTrips())/float64(b.N), "roundtrips/op")
}

// BenchmarkBaselineSetNX is the bare minimum a Redis lock costs: SET NX PX
// and a compare-and-delete script.
func BenchmarkBaselineSetNX(b *testing.B) {
	rdb := redistest.SharedServer(b).NewClient(b)
	rt := redistest.CountTraffic(rdb)
	ctx := context.Background()
	key := "baseline:" + redistest.UniqueName(b)
	del := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	for b.Loop() {
		ok, err := rdb.SetNX(ctx, key, "token", 30*time.Second).Result()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := del.Run(ctx, rdb, []string{key}, "token").Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.RoundTrips())/float64(b.N), "roundtrips/op")
}

// BenchmarkHandoff measures the time from the holder's Unlock call to a
// parked waiter on another client holding the lock, and reports the median
// in round trips: medians of a PING from an idle client, sent just before
// each Unlock.
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.SharedServer(b)
	ctx := context.Background()
	name := redistest.UniqueName(b)
	holderClient, waiterClient := srv.NewClient(b), srv.NewClient(b)
	admin, probe := srv.NewClient(b), srv.NewClient(b)
	holder := rlock.New(holderClient, name)
	waiter := rlock.New(waiterClient, name)
	var lat, pings []time.Duration
	acquired := make(chan time.Time)
	for b.Loop() {
		b.StopTimer()
		if err := holder.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		go func() {
			if err := waiter.Lock(ctx); err != nil {
				b.Error(err)
			}
			acquired <- time.Now()
		}()
		for numSub(b, admin, name) == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // the waiter is parked, the probe idle
		ping := time.Now()
		if err := probe.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(ping))
		b.StartTimer()
		start := time.Now()
		if err := holder.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		at := <-acquired
		b.StopTimer()
		lat = append(lat, at.Sub(start))
		if err := waiter.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	slices.Sort(pings)
	med, rtt := lat[len(lat)/2], pings[len(pings)/2]
	b.ReportMetric(float64(med.Microseconds()), "p50-µs")
	b.ReportMetric(float64(med)/float64(rtt), "p50-roundtrips")
}
