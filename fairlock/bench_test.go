package fairlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// BenchmarkHandoff measures the handoff to the head waiter with 16 waiters
// in line: from the moment the holder decides to unlock until the first
// waiter holds the lock. Every handle has a client of its own, like a
// process of its own. The released handle joins the end of the line again
// only after the handoff has been timed, so that its work does not compete
// with the handoff for the CPU.
//
// The handoff is the release script, the wake-up message to the head and
// the head's acquire script: two script round trips and one pub/sub hop.
// Reported: median and 99th percentile handoff; as yardsticks the median
// PING, the median acquire script from an idle client, and the median
// Unlock call of the holder itself (one script round trip under the same
// load as the handoff); the median handoff in Unlock calls; and the Redis
// commands per handoff from INFO commandstats (the commands run inside
// scripts included; the benchmark's own polling excluded): everything the
// released handle costs to join the end of the line again counts too.
//
//	go test -run '^$' -bench Handoff -benchtime 300x ./fairlock
func BenchmarkHandoff(b *testing.B) {
	b.Run("server", func(b *testing.B) {
		srv := redistest.SharedServer(b)
		benchHandoff(b, func() redis.UniversalClient { return srv.NewClient(b) }, srv.NewClient(b))
	})
	b.Run("cluster", func(b *testing.B) {
		c := redistest.SharedCluster(b)
		name := redistest.UniqueName(b)
		node := c.MasterFor(keyspace.NewNames(name).Lock()).NewClient(b)
		benchHandoffNamed(b, name, func() redis.UniversalClient { return c.NewClient(b) }, node)
	})
}

func benchHandoff(b *testing.B, newClient func() redis.UniversalClient, node *redis.Client) {
	benchHandoffNamed(b, redistest.UniqueName(b), newClient, node)
}

// benchHandoffNamed runs the benchmark on the lock called name; node is a
// plain client of the server that owns the lock's slot.
func benchHandoffNamed(b *testing.B, name string, newClient func() redis.UniversalClient, node *redis.Client) {
	const waiters = 16
	ctx, cancel := context.WithCancel(context.Background())
	type turn struct {
		who int
		at  time.Time
	}
	acquired := make(chan turn)
	unlocked := make(chan time.Duration, 1)     // how long the holder's Unlock took
	release := make([]chan struct{}, waiters+1) // unlock now
	rejoin := make([]chan struct{}, waiters+1)  // join the line again now
	exited := make(chan struct{}, waiters+1)
	for i := range release {
		release[i], rejoin[i] = make(chan struct{}), make(chan struct{})
		m := fairlock.New(newClient(), name)
		go func() {
			defer func() { exited <- struct{}{} }()
			for {
				if err := m.Lock(ctx); err != nil {
					return
				}
				select {
				case acquired <- turn{i, time.Now()}:
				case <-ctx.Done():
				}
				select {
				case <-release[i]:
				case <-ctx.Done():
				}
				start := time.Now()
				if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
					b.Error(err)
				}
				select {
				case unlocked <- time.Since(start):
				default:
				}
				select {
				case <-rejoin[i]:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	defer func() {
		cancel()
		for range release {
			<-exited
		}
	}()
	queue := keyspace.NewNames(name).Queue()
	full := func() {
		for node.LLen(ctx, queue).Val() != waiters {
			time.Sleep(100 * time.Microsecond)
		}
	}
	holder := (<-acquired).who
	full()

	// Two yardsticks: a PING, and one acquire script (a TryLock on the
	// held lock, which changes nothing), both from an idle client.
	probe := fairlock.New(newClient(), name)
	rtt, script := make([]time.Duration, 50), make([]time.Duration, 50)
	for i := range rtt {
		start := time.Now()
		node.Ping(ctx)
		rtt[i] = time.Since(start)
		start = time.Now()
		if ok, err := probe.TryLock(ctx); ok || err != nil {
			b.Fatalf("TryLock on the held lock = %v, %v", ok, err)
		}
		script[i] = time.Since(start)
	}
	own := func(cmd string) bool { return cmd != "llen" && cmd != "info" && cmd != "ping" }
	scripts := func(cmd string) bool { return cmd == "evalsha" || cmd == "eval" }
	cmds0, scripts0 := commandCalls(b, node, own), commandCalls(b, node, scripts)

	lat, unlock := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		release[holder] <- struct{}{}
		next := <-acquired
		lat = append(lat, next.at.Sub(start))
		b.StopTimer()
		unlock = append(unlock, <-unlocked)
		rejoin[holder] <- struct{}{}
		holder = next.who
		full()
		b.StartTimer()
	}
	b.StopTimer()
	cmds, evals := commandCalls(b, node, own)-cmds0, commandCalls(b, node, scripts)-scripts0
	release[holder] <- struct{}{}

	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	median, ping, trip, own50 := p50(lat), p50(rtt), p50(script), p50(unlock)
	b.ReportMetric(float64(median.Microseconds()), "µs/handoff-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs/handoff-p99")
	b.ReportMetric(float64(ping.Microseconds()), "µs/ping-p50")
	b.ReportMetric(float64(trip.Microseconds()), "µs/idle-script-p50")
	b.ReportMetric(float64(own50.Microseconds()), "µs/unlock-p50")
	b.ReportMetric(float64(median)/float64(own50), "unlocks/handoff-p50")
	b.ReportMetric(float64(cmds)/float64(b.N), "redis-cmds/handoff")
	b.ReportMetric(float64(evals)/float64(b.N), "scripts/handoff")
}
