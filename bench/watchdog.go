package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/rlock"
)

// parallelism is how many goroutines take or release many locks at once.
const parallelism = 32

// watchdogLoad holds many locks on one client and measures what keeping
// them alive costs Redis per renewal period.
func watchdogLoad(ctx context.Context, e *env) (*table, error) {
	n, lease := e.cfg.holds, e.cfg.wdTimeout
	period := lease / 3
	rdb, cnt := e.client()
	ms := make([]*rlock.Mutex, n)
	for i := range ms {
		ms[i] = rlock.New(rdb, fmt.Sprintf("bench:watchdog:%d", i), rlock.WithWatchdogTimeout(lease))
	}
	defer unlockAll(ctx, ms)
	start := time.Now()
	if err := forEach(ctx, n, func(i int) error { return ms[i].Lock(ctx) }); err != nil {
		return nil, err
	}
	acquire := time.Since(start)

	// Holds taken at different moments soon share one batch: let them.
	sleepCtx(ctx, 2*period)
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	sent := readCounters(cnt)
	peak, err := peakOps(ctx, e, time.Duration(e.cfg.periods)*period)
	if err != nil {
		return nil, err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	d := readCounters(cnt).sub(sent)

	p := float64(e.cfg.periods)
	trips := float64(d.trips) / p
	e.set("watchdog", us, "trips", trips)
	tb := newTable(fmt.Sprintf("Watchdog: %d held locks on one client, lease %v (renewed every %v)", n, lease, period),
		"measure", "per renewal period")
	tb.add("round trips", num(trips))
	tb.add("pipelines", num(float64(d.pipelines)/p))
	tb.add("renewal scripts (EVALSHA)", num(float64(after.scriptsSince(before))/p))
	tb.add("Redis commands (commandstats, inside scripts too)", num(float64(after.commandsSince(before))/p))
	tb.add("total_commands_processed", num(float64(after.processed-before.processed)/p))
	tb.add("peak instantaneous_ops_per_sec", fmt.Sprint(peak))
	tb.add("holds lost", fmt.Sprint(lost(ms)))
	tb.note("Measured over %d periods, after taking the %d locks (%v) and waiting two periods. Renewals go in pipelines of up to 1,000. total_commands_processed counts the commands inside scripts too, and the benchmark's INFO calls.",
		e.cfg.periods, n, acquire.Round(time.Millisecond))
	return tb, nil
}

// lost counts the handles whose hold has ended.
func lost(ms []*rlock.Mutex) int {
	n := 0
	for _, m := range ms {
		select {
		case <-m.Done():
			n++
		default:
		}
	}
	return n
}

// peakOps samples the server's instantaneous_ops_per_sec every 100ms for
// d and returns the highest.
func peakOps(ctx context.Context, e *env, d time.Duration) (int64, error) {
	var peak int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		s, err := readServer(ctx, e.ctl)
		if err != nil {
			return 0, err
		}
		peak = max(peak, s.opsPerSec)
	}
	return peak, nil
}

// unlockAll releases whatever ms hold, even after ctx is done.
func unlockAll(ctx context.Context, ms []*rlock.Mutex) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = forEach(uctx, len(ms), func(i int) error {
		_ = ms[i].Unlock(uctx) // ErrNotHeld for those never taken
		return nil
	})
}

// forEach runs f(0..n-1) on a few goroutines and returns the first error.
func forEach(ctx context.Context, n int, f func(i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		first error
		once  sync.Once
	)
	for range min(parallelism, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
