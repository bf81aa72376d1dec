package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	nWorkers = 16
	nClients = 4
)

// workload is what each worker does in a loop: think outside the lock for
// a random time in [0, think), then hold the lock for cs.
type workload struct {
	name  string
	title string
	think time.Duration
	cs    time.Duration
	busy  bool // the critical section spins on the CPU instead of sleeping
}

// workers is scenario 3: 16 workers over 4 clients on one lock, thinking
// 0-4 ms, then holding it for 1 ms.
func workers(ctx context.Context, e *env) (*table, error) {
	return workersAgainstLimit(ctx, e, workload{"workers", "3. Workers: 16 workers over 4 clients, think 0-4 ms, 1 ms critical section",
		4 * time.Millisecond, time.Millisecond, false})
}

// workersBusy is scenario 3 with a critical section that works (spins)
// for 1 ms instead of sleeping. A sleep of 1 ms overshoots by up to a
// millisecond whenever the process wakes for something else meanwhile
// (Go waits for its timers in epoll, whose timeout is in whole
// milliseconds), so with sleeping workers the share of the serial limit
// also measures how often the process wakes during a critical section,
// not only the gaps between holders.
func workersBusy(ctx context.Context, e *env) (*table, error) {
	return workersAgainstLimit(ctx, e, workload{"workers-busy", "3b. Workers, busy: 16 workers over 4 clients, think 0-4 ms, 1 ms critical section spinning on the CPU",
		4 * time.Millisecond, time.Millisecond, true})
}

// workersAgainstLimit runs w and adds the serial limit of its critical
// sections to the table.
func workersAgainstLimit(ctx context.Context, e *env, w workload) (*table, error) {
	tb, err := runWorkload(ctx, e, w)
	if err != nil {
		return nil, err
	}
	limit, how := serialLimit(w.cs, w.busy), "sleeps"
	if w.busy {
		how = "spins"
	}
	e.set(w.name, "serial", "cs/s", limit)
	tb.add("(serial limit: back-to-back 1 ms "+how+")", num(limit), dur(every(limit)), "", "", "", "", "", "")
	return tb, nil
}

// contention is scenario 4: the same workers with an empty critical
// section and no think time.
func contention(ctx context.Context, e *env) (*table, error) {
	w := workload{"contention", "4. Pure contention: 16 workers over 4 clients, no think time, empty critical section", 0, 0, false}
	tb, err := runWorkload(ctx, e, w)
	if err == nil {
		tb.note("Pollers barge here: the worker that just unlocked usually takes the lock again on its next attempt.")
	}
	return tb, err
}

func runWorkload(ctx context.Context, e *env, w workload) (*table, error) {
	tb := newTable(w.title, "library", "CS/s", "CS mean", "gap/CS", "Redis commands/CS", "round trips/CS",
		"wait p50", "wait p99", "max CS share")
	for _, c := range contenders {
		if !c.waits {
			continue
		}
		r, err := mutexLoops(e, c.newLocker, "bench:"+w.name+":"+c.name, w).run(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		n := float64(r.ops())
		perSec := n / r.elapsed.Seconds()
		cmds := float64(r.cmds) / n
		wait := summarize(r.roles[0].waits)
		e.set(w.name, c.name, "cs/s", perSec)
		e.set(w.name, c.name, "cmds", cmds)
		trips := num(float64(r.trips) / n)
		if c.ownClient {
			trips = "-"
		} else {
			e.set(w.name, c.name, "trips", float64(r.trips)/n)
		}
		e.set(w.name, c.name, "p99", float64(wait.p99))
		if e.cfg.verbose {
			tb.note("%s, per CS: %s", c.name, r.breakdown)
		}
		held := r.roles[0].held / time.Duration(n)
		tb.add(c.name, num(perSec), dur(held), dur(max(every(perSec)-held, 0)), num(cmds), trips,
			dur(wait.p50), dur(wait.p99), fmt.Sprintf("%.0f%%", 100*r.maxShare))
	}
	tb.note("Measured for %v after %v of warm-up. CS mean: how long a critical section took, from holding the lock to calling Unlock (a sleep overshoots when the process wakes during it). Gap/CS: the rest of the time per critical section, when no worker was in one: the handoffs, and any moment nobody wanted the lock. Redis commands from INFO commandstats, counting those run inside scripts; round trips counted by the go-redis clients (\"-\" for a library on a client of its own). Wait: from the Lock call to holding the lock. Max CS share: the busiest worker's share of all critical sections (fair: %.0f%%).",
		e.cfg.window, e.cfg.warmup, 100.0/nWorkers)
	return tb, nil
}

// mutexLoops sets up the workers of w on a mutex: nWorkers handles on the
// lock key, spread over nClients clients.
func mutexLoops(e *env, newLocker func(*redis.Client, string) locker, key string, w workload) loops {
	l := loops{roles: 1, allowed: func(inside []int32) bool { return inside[0] <= 1 }}
	for i := range nClients {
		rdb, cnt := e.client()
		l.counters = append(l.counters, cnt)
		for j := i; j < nWorkers; j += nClients {
			h := newLocker(rdb, key)
			l.workers = append(l.workers, worker{lock: h.Lock, unlock: h.Unlock, think: w.think, hold: w.cs, busy: w.busy})
		}
	}
	return l
}

// serialLimit is how many critical sections of length cs fit in a second
// back to back on this machine: what a perfect lock would reach. busy:
// the sections spin on the CPU instead of sleeping.
func serialLimit(cs time.Duration, busy bool) float64 {
	const n = 200
	start := time.Now()
	for range n {
		holdFor(cs, busy)
	}
	return n / time.Since(start).Seconds()
}

// holdFor spends d in a critical section: spinning on the CPU when busy,
// else asleep.
func holdFor(d time.Duration, busy bool) {
	if !busy {
		time.Sleep(d)
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}

// every is the time between two of something that happens rate times a
// second.
func every(rate float64) time.Duration { return time.Duration(float64(time.Second) / rate) }
