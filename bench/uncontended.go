package main

import (
	"context"
	"time"
)

// uncontended is scenario 1: one handle locks and unlocks a lock nobody
// else wants. The libraries take turns in rounds, so that load from
// elsewhere on the machine falls on all of them alike.
func uncontended(ctx context.Context, e *env) (*table, error) {
	rdb, cnt := e.client()
	type total struct {
		ops     int
		elapsed time.Duration
		sent    counts
		cmds    int64
	}
	totals := make([]total, len(contenders))
	lockers := make([]locker, len(contenders))
	for i, c := range contenders {
		lockers[i] = c.newLocker(rdb, "bench:uncontended:"+c.name)
		// Warm up: load the scripts, open the connection.
		if _, err := lockUnlock(ctx, lockers[i], 100, 0); err != nil {
			return nil, err
		}
	}
	slice := e.cfg.uncontended / time.Duration(max(e.cfg.rounds, 1))
	for range max(e.cfg.rounds, 1) {
		for i, l := range lockers {
			before, err := readServer(ctx, e.ctl)
			if err != nil {
				return nil, err
			}
			sent := readCounters(cnt)
			start := time.Now()
			n, err := lockUnlock(ctx, l, 0, slice)
			if err != nil {
				return nil, err
			}
			elapsed := time.Since(start)
			after, err := readServer(ctx, e.ctl)
			if err != nil {
				return nil, err
			}
			t := &totals[i]
			t.ops += n
			t.elapsed += elapsed
			t.sent = t.sent.add(readCounters(cnt).sub(sent))
			t.cmds += after.commandsSince(before)
		}
	}

	tb := newTable("1. Uncontended Lock+Unlock",
		"library", "ns/op", "vs bare", "round trips/op", "Redis commands/op")
	var bareNs float64
	for i, c := range contenders {
		if !c.waits {
			bareNs = float64(totals[i].elapsed.Nanoseconds()) / float64(totals[i].ops)
		}
	}
	for i, c := range contenders {
		t := totals[i]
		ns := float64(t.elapsed.Nanoseconds()) / float64(t.ops)
		e.set("uncontended", c.name, "ns", ns)
		tb.add(c.name, num(ns), ratio(ns, bareNs),
			num(float64(t.sent.trips)/float64(t.ops)), num(float64(t.cmds)/float64(t.ops)))
	}
	tb.note("%d rounds; Redis commands from INFO commandstats, counting those run inside scripts.", max(e.cfg.rounds, 1))
	return tb, nil
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
