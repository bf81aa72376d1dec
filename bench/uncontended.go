package main

import (
	"context"
	"time"
)

// uncontendedTotal is what one library did over all rounds.
type uncontendedTotal struct {
	ops     int
	elapsed time.Duration
	trips   int64
	cmds    int64
}

func (t uncontendedTotal) per(v int64) float64 { return float64(v) / float64(t.ops) }

func (t uncontendedTotal) ns() float64 { return t.per(t.elapsed.Nanoseconds()) }

// uncontended is scenario 1: one handle locks and unlocks a lock nobody
// else wants. The libraries take turns in rounds, so that load from
// elsewhere on the machine falls on all of them alike.
func uncontended(ctx context.Context, e *env) (*table, error) {
	rdb, cnt := e.client()
	totals := make([]uncontendedTotal, len(contenders))
	lockers := make([]locker, len(contenders))
	for i, c := range contenders {
		lockers[i] = c.newLocker(rdb, "bench:uncontended:"+c.name)
		// Warm up: load the scripts, open the connection.
		if _, err := lockUnlock(ctx, lockers[i], 100, 0); err != nil {
			return nil, err
		}
	}
	rounds := max(e.cfg.rounds, 1)
	for range rounds {
		for i, l := range lockers {
			if err := totals[i].round(ctx, e, l, cnt, e.cfg.uncontended/time.Duration(rounds)); err != nil {
				return nil, err
			}
		}
	}

	tb := newTable("1. Uncontended Lock+Unlock",
		"library", "ns/op", "vs bare", "round trips/op", "Redis commands/op")
	var bare float64
	for i, c := range contenders {
		if !c.waits {
			bare = totals[i].ns()
		}
	}
	for i, c := range contenders {
		t := totals[i]
		e.set("uncontended", c.name, "ns", t.ns())
		tb.add(c.name, num(t.ns()), ratio(t.ns(), bare), num(t.per(t.trips)), num(t.per(t.cmds)))
	}
	tb.note("%d rounds; Redis commands from INFO commandstats, counting those run inside scripts.", rounds)
	return tb, nil
}

// round locks and unlocks l for d and adds what it measured to t.
func (t *uncontendedTotal) round(ctx context.Context, e *env, l locker, cnt *counter, d time.Duration) error {
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	sent := readCounters(cnt)
	start := time.Now()
	n, err := lockUnlock(ctx, l, 0, d)
	if err != nil {
		return err
	}
	t.elapsed += time.Since(start)
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	t.ops += n
	t.trips += readCounters(cnt).sub(sent).trips
	t.cmds += after.commandsSince(before)
	return nil
}

// lockUnlock locks and unlocks l n times, or for d when n is 0, and
// returns how many times it did.
func lockUnlock(ctx context.Context, l locker, n int, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	done := 0
	for {
		if n > 0 && done == n || n == 0 && done%64 == 0 && !time.Now().Before(deadline) {
			return done, nil
		}
		if err := l.Lock(ctx); err != nil {
			return done, err
		}
		if err := l.Unlock(ctx); err != nil {
			return done, err
		}
		done++
	}
}
