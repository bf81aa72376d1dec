// The semaphore scenario, written against the semaphore API of DESIGN.md.
// Remove the build line above once the semaphore branch is merged.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
)

func init() { scenarios = append(scenarios, scenario{"semaphore", permits}) }

const nPermits = 4

// permits runs the workers of scenario 3 (16 over 4 clients, think 0-4 ms,
// hold 1 ms) on a semaphore of 4 permits, counting and leased.
func permits(ctx context.Context, e *env) (*table, error) {
	tb := newTable(fmt.Sprintf("semaphore: %d workers over %d clients on %d permits, think 0-4 ms, 1 ms hold", nWorkers, nClients, nPermits),
		"semaphore", "acquisitions/s", "Redis commands/acquisition", "round trips/acquisition", "wait p50", "wait p99", "most holders at once")
	for _, name := range []string{"redisync Semaphore", "redisync Leased"} {
		key := "bench:semaphore:" + name
		l := loops{roles: 1, allowed: func(in []int32) bool { return in[0] <= nPermits }}
		for i := range nClients {
			rdb, cnt := e.client()
			l.counters = append(l.counters, cnt)
			if i == 0 {
				if err := setPermits(ctx, rdb, name, key); err != nil {
					return nil, fmt.Errorf("%s: set permits: %w", name, err)
				}
			}
			for range nWorkers / nClients {
				w := worker{think: 4 * time.Millisecond, hold: time.Millisecond}
				w.lock, w.unlock = permitOps(rdb, name, key)
				l.workers = append(l.workers, w)
			}
		}
		r, err := l.run(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		n := float64(r.ops())
		wait := summarize(r.roles[0].waits)
		if e.cfg.verbose {
			tb.note("%s, per acquisition: %s", name, r.breakdown)
		}
		tb.add(name, num(n/r.elapsed.Seconds()), num(float64(r.cmds)/n), num(float64(r.trips)/n),
			dur(wait.p50), dur(wait.p99), fmt.Sprint(r.roles[0].maxInside))
	}
	tb.add("(serial limit: 4 x back-to-back 1 ms sleeps)", num(nPermits*serialLimit(time.Millisecond, false)), "", "", "", "", "")
	tb.note("Measured for %v after %v of warm-up.", e.cfg.window, e.cfg.warmup)
	return tb, nil
}

func setPermits(ctx context.Context, rdb *redis.Client, name, key string) error {
	if name == "redisync Leased" {
		return semaphore.NewLeased(rdb, key).SetPermits(ctx, nPermits)
	}
	return semaphore.New(rdb, key).SetPermits(ctx, nPermits)
}

// permitOps returns a worker's acquire and release of one permit.
func permitOps(rdb *redis.Client, name, key string) (acquire, release func(context.Context) error) {
	if name == "redisync Leased" {
		l := semaphore.NewLeased(rdb, key)
		var id string // the worker's permit; one at a time
		acquire = func(ctx context.Context) (err error) {
			id, err = l.Acquire(ctx, 0)
			return err
		}
		release = func(ctx context.Context) error { return l.Release(ctx, id) }
		return acquire, release
	}
	s := semaphore.New(rdb, key)
	acquire = func(ctx context.Context) error { return s.Acquire(ctx, 1) }
	release = func(ctx context.Context) error { return s.Release(ctx, 1) }
	return acquire, release
}
