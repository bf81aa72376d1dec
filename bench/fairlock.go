// The fairlock scenario, written against the fairlock API of DESIGN.md.
// Remove the build line above once the fairlock branch is merged.

package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
)

func init() { scenarios = append(scenarios, scenario{"fairlock", fairHandoff}) }

const (
	queueLen    = 16 // waiters queued behind the holder
	queueRounds = 5  // times the queue is built and drained
)

// queuer is a mutex under test in the queue scenario, and how to tell that
// its n-th waiter is queued.
type queuer struct {
	name      string
	newLocker func(*redis.Client, string) locker
	queued    func(ctx context.Context, e *env, key string, n int) error
}

// fairHandoff builds a queue of 16 waiters on 4 clients behind a holder,
// one after the other, then lets the holder unlock: each waiter unlocks as
// soon as it holds the lock. Measured: each handoff (one holder's Unlock
// call to the next holding the lock), whether the lock went in arrival
// order, and what it cost Redis. rlock runs the same for comparison.
func fairHandoff(ctx context.Context, e *env) (*table, error) {
	tb := newTable(fmt.Sprintf("fairlock: handoffs through %d queued waiters on %d clients", queueLen, nClients),
		"library", "handoff p50", "handoff p99", "in arrival order", "Redis commands/handoff", "round trips/handoff")
	for _, q := range []queuer{
		{"redisync fairlock", func(rdb *redis.Client, key string) locker { return fairlock.New(rdb, key) }, fairQueued},
		{"redisync rlock", newRedisync, fairQueued}, // rlock's waiters stand in a line too
	} {
		var (
			lat         []time.Duration
			inOrder     int
			cmds, trips int64
		)
		for round := range queueRounds {
			r, err := drainQueue(ctx, e, q, fmt.Sprintf("bench:queue:%s:%d", q.name, round))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			lat = append(lat, r.lat...)
			inOrder += r.inOrder
			cmds += r.cmds
			trips += r.trips
		}
		n := float64(queueLen * queueRounds)
		s := summarize(lat)
		tb.add(q.name, dur(s.p50), dur(s.p99), fmt.Sprintf("%.0f%%", 100*float64(inOrder)/n),
			num(float64(cmds)/n), num(float64(trips)/n))
	}
	tb.note("%d rounds. In arrival order: handoffs that went to the waiter that queued next.", queueRounds)
	return tb, nil
}

// queueResult is one drained queue.
type queueResult struct {
	lat         []time.Duration
	inOrder     int
	cmds, trips int64
}

// acquisition is one waiter's turn: its arrival index, when it held the
// lock and when it called Unlock.
type acquisition struct {
	idx             int
	held, unlocking time.Time
}

func drainQueue(ctx context.Context, e *env, q queuer, key string) (queueResult, error) {
	var r queueResult
	holder, waiters, counters := queueHandles(e, q, key)
	if err := holder.Lock(ctx); err != nil {
		return r, err
	}
	turns := make(chan acquisition, queueLen)
	errs := make(chan error, queueLen)
	for i, w := range waiters {
		go func() {
			a, err := takeTurn(ctx, w, i)
			if err != nil {
				errs <- err
				return
			}
			turns <- a
		}()
		if err := q.queued(ctx, e, key, i+1); err != nil {
			return r, err
		}
	}
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return r, err
	}
	sent := readCounters(counters...)
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		return r, err
	}
	var all []acquisition
	for range queueLen {
		select {
		case a := <-turns:
			all = append(all, a)
		case err := <-errs:
			return r, err
		}
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return r, err
	}
	r.cmds = after.commandsSince(before)
	r.trips = readCounters(counters...).sub(sent).trips
	r.lat, r.inOrder = handoffTimes(start, all)
	return r, nil
}

// queueHandles returns a holder on its own client and the waiters spread
// over nClients more, with the counters of all of them.
func queueHandles(e *env, q queuer, key string) (holder locker, waiters []locker, counters []*counter) {
	hrdb, cnt := e.client()
	holder, counters = q.newLocker(hrdb, key), []*counter{cnt}
	var rdbs []*redis.Client
	for range nClients {
		rdb, cnt := e.client()
		rdbs, counters = append(rdbs, rdb), append(counters, cnt)
	}
	for i := range queueLen {
		waiters = append(waiters, q.newLocker(rdbs[i%nClients], key))
	}
	return holder, waiters, counters
}

// takeTurn locks and at once unlocks w, the waiter that arrived i-th.
func takeTurn(ctx context.Context, w locker, i int) (acquisition, error) {
	if err := w.Lock(ctx); err != nil {
		return acquisition{}, err
	}
	a := acquisition{idx: i, held: time.Now()}
	a.unlocking = time.Now()
	return a, w.Unlock(context.WithoutCancel(ctx))
}

// handoffTimes orders the turns by when they held the lock and returns
// each handoff's time, from the previous holder's Unlock call (the first
// holder's at start), and how many went to the next waiter in arrival
// order.
func handoffTimes(start time.Time, all []acquisition) (lat []time.Duration, inOrder int) {
	slices.SortFunc(all, func(a, b acquisition) int { return a.held.Compare(b.held) })
	prev := start
	for pos, a := range all {
		lat = append(lat, a.held.Sub(prev))
		prev = a.unlocking
		if a.idx == pos {
			inOrder++
		}
	}
	return lat, inOrder
}

// fairQueued waits until the fair lock's queue holds n waiters.
func fairQueued(ctx context.Context, e *env, key string, n int) error {
	queue := "redisync:{" + key + "}:queue"
	return poll(ctx, 10*time.Second, func() bool { return e.ctl.LLen(ctx, queue).Val() >= int64(n) })
}
