package main

import (
	"context"
	"time"
)

// burst is how many Lock+Unlock pairs one library runs before the next
// takes its turn.
const burst = 32

// uncontendedTotal is what one library did.
type uncontendedTotal struct {
	ops     int
	elapsed time.Duration
	trips   float64 // per op
	cmds    float64 // per op
}

func (t uncontendedTotal) ns() float64 { return float64(t.elapsed.Nanoseconds()) / float64(t.ops) }

// uncontended is scenario 1: one handle locks and unlocks a lock nobody
// else wants. The libraries take turns in short bursts, so that load from
// elsewhere on the machine falls on all of them alike.
func uncontended(ctx context.Context, e *env) (*table, error) {
	rdb, cnt := e.client()
	totals := make([]uncontendedTotal, len(contenders))
	lockers := make([]locker, len(contenders))
	for i, c := range contenders {
		lockers[i] = c.newLocker(rdb, "bench:uncontended:"+c.name)
		// Warm up (load the scripts, open the connection), then count
		// what a Lock+Unlock costs Redis.
		if _, err := lockUnlock(ctx, lockers[i], 100); err != nil {
			return nil, err
		}
		if err := totals[i].count(ctx, e, lockers[i], cnt); err != nil {
			return nil, err
		}
	}
	if err := takeTurns(ctx, lockers, totals, e.cfg.uncontended); err != nil {
		return nil, err
	}

	tb := newTable("1. Uncontended Lock+Unlock",
		"library", "ns/op", "vs bare", "round trips/op", "Redis commands/op")
	var bare float64
	for i, c := range contenders {
		if c.bare {
			bare = totals[i].ns()
		}
	}
	for i, c := range contenders {
		t := totals[i]
		e.set("uncontended", c.name, "ns", t.ns())
		trips := num(t.trips)
		if c.ownClient {
			trips = "-"
		}
		tb.add(c.name, num(t.ns()), ratio(t.ns(), bare), trips, num(t.cmds))
	}
	tb.note("About %v per library, in turns of %d Lock+Unlock. Redis commands from INFO commandstats, counting those run inside scripts. \"rlock scripts alone\" runs rlock's two scripts straight from go-redis: the difference to redisync rlock is what the library costs in Go.",
		e.cfg.uncontended, burst)
	return tb, nil
}

// takeTurns runs Lock+Unlock on each of lockers for about d each, in
// bursts, adding to totals.
func takeTurns(ctx context.Context, lockers []locker, totals []uncontendedTotal, d time.Duration) error {
	deadline := time.Now().Add(d * time.Duration(len(lockers)))
	for turn := 0; time.Now().Before(deadline); turn++ {
		for j := range lockers {
			i := (turn + j) % len(lockers) // who goes first rotates
			start := time.Now()
			n, err := lockUnlock(ctx, lockers[i], burst)
			if err != nil {
				return err
			}
			totals[i].elapsed += time.Since(start)
			totals[i].ops += n
		}
	}
	return nil
}

// count measures the round trips and Redis commands of a Lock+Unlock of l.
func (t *uncontendedTotal) count(ctx context.Context, e *env, l locker, cnt *counter) error {
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	sent := readCounters(cnt)
	n, err := lockUnlock(ctx, l, 100)
	if err != nil {
		return err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	t.trips = float64(readCounters(cnt).sub(sent).trips) / float64(n)
	t.cmds = float64(after.commandsSince(before)) / float64(n)
	return nil
}

// lockUnlock locks and unlocks l n times and returns how many times it did.
// It stops when ctx ends, whatever a locker does with a ctx that has ended.
func lockUnlock(ctx context.Context, l locker, n int) (int, error) {
	for done := range n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		if err := l.Lock(ctx); err != nil {
			return done, err
		}
		if err := l.Unlock(ctx); err != nil {
			return done, err
		}
	}
	return n, nil
}
