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
// Each reports its cost in round trips ("rtt/op"), measured against PING in
// the same run, so the numbers compare across machines.

// rtt measures the median PING round trip of rdb.
func rtt(b *testing.B, rdb *redis.Client) time.Duration {
	ctx := context.Background()
	var ds []time.Duration
	for range 200 {
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func BenchmarkLockUnlock(b *testing.B) {
	rdb := redistest.SharedServer(b).NewClient(b)
	ctx := context.Background()
	m := rlock.New(rdb, redistest.UniqueName(b))
	base := rtt(b, rdb)
	b.ResetTimer()
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(base), "rtt/op")
}

// BenchmarkBaselineSetNX is the bare minimum a Redis lock costs: SET NX PX
// and a compare-and-delete script.
func BenchmarkBaselineSetNX(b *testing.B) {
	rdb := redistest.SharedServer(b).NewClient(b)
	ctx := context.Background()
	key := "baseline:" + redistest.UniqueName(b)
	del := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	base := rtt(b, rdb)
	b.ResetTimer()
	for b.Loop() {
		ok, err := rdb.SetNX(ctx, key, "token", 30*time.Second).Result()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := del.Run(ctx, rdb, []string{key}, "token").Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(base), "rtt/op")
}

// BenchmarkHandoff measures the time from the holder's Unlock call to a
// parked waiter on another client holding the lock.
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.SharedServer(b)
	ctx := context.Background()
	name := redistest.UniqueName(b)
	holderClient, waiterClient := srv.NewClient(b), srv.NewClient(b)
	admin := srv.NewClient(b)
	base := rtt(b, holderClient)
	holder := rlock.New(holderClient, name)
	waiter := rlock.New(waiterClient, name)
	var lat []time.Duration
	acquired := make(chan time.Time)
	b.ResetTimer()
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
		for redistest.NumSub(b, admin, "redisync:{"+name+"}:chan") == 0 {
			time.Sleep(time.Millisecond)
		}
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
	med := lat[len(lat)/2]
	b.ReportMetric(float64(med.Microseconds()), "p50-µs")
	b.ReportMetric(float64(med)/float64(base), "p50-rtt")
}
