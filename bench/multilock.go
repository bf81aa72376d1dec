package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

func init() {
	scenarios = append(scenarios,
		scenario{"multilock", multilockUncontended},
		scenario{"multilock-crossed", multilockCrossed},
		scenario{"quorum", quorumUncontended})
}

// group returns an all-of group of n rlocks on rdb, named key:0 to key:n-1.
func group(rdb *redis.Client, key string, n int) *multilock.Group {
	ls := make([]multilock.Locker, n)
	for i := range ls {
		ls[i] = rlock.New(rdb, fmt.Sprintf("%s:%d", key, i))
	}
	return multilock.New(ls...)
}

// multilockUncontended locks and unlocks a free group of 2 and of 8 locks,
// next to a single rlock, as scenario 1 does.
func multilockUncontended(ctx context.Context, e *env) (*table, error) {
	rdb, cnt := e.client()
	names := []string{"rlock, 1 lock", "multilock.New of 2", "multilock.New of 8"}
	lockers := []locker{rlock.New(rdb, "bench:ml:1"), group(rdb, "bench:ml:2", 2), group(rdb, "bench:ml:8", 8)}
	totals := make([]uncontendedTotal, len(lockers))
	for i, l := range lockers {
		if _, err := lockUnlock(ctx, l, 100); err != nil {
			return nil, err
		}
		if err := totals[i].count(ctx, e, l, cnt); err != nil {
			return nil, err
		}
	}
	if err := takeTurns(ctx, e, lockers, totals, e.cfg.uncontended, cnt, nil); err != nil {
		return nil, err
	}
	tb := newTable("multilock: uncontended Lock+Unlock of a group", "group", "ns/op", "vs 1 lock", "round trips/op", "Redis commands/op", "server µs/op")
	for i, t := range totals {
		e.set("multilock", names[i], "ns", t.ns())
		tb.add(names[i], num(t.ns()), ratio(t.ns(), totals[0].ns()), num(t.trips), num(t.cmds), usecs(t.usec()))
	}
	tb.note("As scenario 1: about %v per row, in turns of %d. Lock takes the members one after the other in the order of their names (one acquire script each); Unlock releases them in parallel.",
		e.cfg.uncontended, burst)
	return tb, nil
}

// multilockCrossed runs 16 workers over 4 clients on two locks x and y
// with no think time and an empty critical section: half the workers lock
// the group (x, y), half (y, x). A group built in call order would
// deadlock; the canonical order makes both the same group.
func multilockCrossed(ctx context.Context, e *env) (*table, error) {
	w := workload{name: "multilock-crossed"}
	tb := newTable("multilock: 16 workers over 4 clients on groups (x, y) and (y, x), empty critical section",
		"setup", "groups/s", "Redis commands/group", "round trips/group", "wait p50", "wait p99")
	for _, row := range []struct {
		name    string
		crossed bool
	}{{"multilock.New, crossed order", true}, {"multilock.New, same order", false}} {
		var made atomic.Int64
		newGroup := func(rdb *redis.Client, key string) locker {
			x, y := rlock.New(rdb, key+":x"), rlock.New(rdb, key+":y")
			if row.crossed && made.Add(1)%2 == 0 {
				return multilock.New(y, x)
			}
			return multilock.New(x, y)
		}
		r, err := mutexLoops(e, newGroup, "bench:crossed:"+row.name, w).run(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", row.name, err)
		}
		n := float64(r.ops())
		wait := summarize(r.roles[0].waits)
		e.set(w.name, row.name, "cs/s", n/r.elapsed.Seconds())
		tb.add(row.name, num(n/r.elapsed.Seconds()), num(float64(r.cmds)/n), num(float64(r.trips)/n), dur(wait.p50), dur(wait.p99))
	}
	tb.note("Measured for %v after %v of warm-up, as scenario 4; every hold is checked to exclude the others. Wait: from the group's Lock call to holding both locks.",
		e.cfg.window, e.cfg.warmup)
	return tb, nil
}

// quorumUncontended compares, on three servers of their own, a quorum of
// three rlocks and redsync's Redlock with a single rlock, uncontended.
func quorumUncontended(ctx context.Context, e *env) (*table, error) {
	addrs := []string{e.addr}
	for range 2 {
		srv, err := startServer(ctx)
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		addrs = append(addrs, srv.addr)
	}
	var rdbs []*redis.Client
	var cnts []*counter
	var pools []redsyncredis.Pool
	for _, a := range addrs {
		rdb, cnt := e.clientAt(a)
		rdbs, cnts, pools = append(rdbs, rdb), append(cnts, cnt), append(pools, goredis.NewPool(rdb))
	}
	var members []multilock.Locker
	for _, rdb := range rdbs {
		members = append(members, rlock.New(rdb, "bench:quorum:redisync"))
	}
	names := []string{"redisync rlock, 1 server", "redisync quorum of 3", "redsync Redlock over 3"}
	lockers := []locker{
		rlock.New(rdbs[0], "bench:quorum:single"),
		multilock.NewQuorum(members...),
		redsyncLocker{redsync.New(pools...).NewMutex("bench:quorum:redsync")},
	}
	totals := make([]uncontendedTotal, len(lockers))
	for i, l := range lockers {
		if _, err := lockUnlock(ctx, l, 100); err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		before := readCounters(cnts...)
		n, err := lockUnlock(ctx, l, 100)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		totals[i].trips = float64(readCounters(cnts...).sub(before).trips) / float64(n)
	}
	// No server time: the group's commands go to three servers.
	if err := takeTurns(ctx, e, lockers, totals, e.cfg.uncontended, nil, nil); err != nil {
		return nil, err
	}
	tb := newTable("quorum: uncontended Lock+Unlock over 3 independent servers", "library", "ns/op", "vs 1 server", "round trips/op (all servers)")
	for i, t := range totals {
		e.set("quorum", names[i], "ns", t.ns())
		tb.add(names[i], num(t.ns()), ratio(t.ns(), totals[0].ns()), num(t.trips))
	}
	tb.note("Three redis-server processes on loopback, one client each; the quorums send to all three at once. As scenario 1: about %v per row, in turns of %d. redsync with default options (8 s expiry).",
		e.cfg.uncontended, burst)
	return tb, nil
}
