package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// parkDelay is how long a waiter waits before the holder unlocks: long
	// enough for any library to have gone to sleep. A random part of up to
	// parkJitter more lands the unlock at a random phase of a poller's
	// backoff.
	parkDelay  = 20 * time.Millisecond
	parkJitter = 10 * time.Millisecond
	// minHandoffs is the least number of handoffs measured per library,
	// whatever the time budget.
	minHandoffs = 10
)

// handoff is scenario 2: a holder on one client unlocks while one waiter on
// another client is parked; measured from the Unlock call to the waiter
// holding the lock.
func handoff(ctx context.Context, e *env) (*table, error) {
	tb := newTable("2. Handoff to a parked waiter (Unlock call -> waiter holds the lock)",
		"library", "handoffs", "p50", "p99", "p50 vs redisync", "p50 vs bare grant")
	bare, err := bareGrants(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("bare grant: %w", err)
	}
	floor := summarize(bare)
	e.set("handoff", bareGrant, "p50", float64(floor.p50))
	var base time.Duration
	for _, c := range contenders {
		if !c.waits {
			continue
		}
		lat, err := handoffs(ctx, e, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		s := summarize(lat)
		if base == 0 {
			base = s.p50
		}
		e.set("handoff", c.name, "p50", float64(s.p50))
		e.set("handoff", c.name, "p99", float64(s.p99))
		tb.add(c.name, fmt.Sprint(s.n), dur(s.p50), dur(s.p99), ratio(float64(s.p50), float64(base)), ratio(float64(s.p50), float64(floor.p50)))
	}
	tb.add("("+bareGrant+": a script gives a key to a parked subscriber)", fmt.Sprint(floor.n), dur(floor.p50), dur(floor.p99), "", "1.00x")
	tb.note("The waiter has waited %v-%v when the holder unlocks. Each library runs for about %v (at least %d handoffs, at most %d).",
		parkDelay, parkDelay+parkJitter, e.cfg.handoff, minHandoffs, e.cfg.handoffN)
	return tb, nil
}

func handoffs(ctx context.Context, e *env, c contender) ([]time.Duration, error) {
	a, _ := e.client()
	b, _ := e.client()
	key := "bench:handoff:" + c.name
	holder, waiter := c.newLocker(a, key), c.newLocker(b, key)
	var lat []time.Duration
	deadline := time.Now().Add(e.cfg.handoff)
	for len(lat) < e.cfg.handoffN && (len(lat) < minHandoffs || time.Now().Before(deadline)) {
		d, err := handoffOnce(ctx, e, c, key, holder, waiter)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

func handoffOnce(ctx context.Context, e *env, c contender, key string, holder, waiter locker) (time.Duration, error) {
	if err := holder.Lock(ctx); err != nil {
		return 0, err
	}
	held := make(chan time.Time, 1)
	failed := make(chan error, 1)
	go func() {
		if err := waiter.Lock(ctx); err != nil {
			failed <- err
			return
		}
		held <- time.Now()
	}()
	if c.parked != nil {
		if err := c.parked(ctx, e.ctl, key); err != nil {
			return 0, err
		}
	}
	time.Sleep(parkDelay + rand.N(parkJitter))
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		return 0, err
	}
	select {
	case t := <-held:
		return t.Sub(start), waiter.Unlock(ctx)
	case err := <-failed:
		return 0, err
	}
}

// bareGrantScript is the least a handoff through Redis does: one script
// gives a plain key to the waiter and publishes on its channel.
var bareGrantScript = redis.NewScript(`
redis.call('set', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)

// bareGrants measures the floor of a handoff through go-redis on this
// machine, in the same run as the libraries: a client runs
// bareGrantScript while the waiter, parked on a subscription on another
// client, returns when the message arrives. Measured from the script call
// to the waiter's return, as many times as a library's handoffs.
func bareGrants(ctx context.Context, e *env) ([]time.Duration, error) {
	a, _ := e.clientAt(e.direct)
	b, _ := e.clientAt(e.direct)
	key, channel := "bench:bare-grant", "bench:bare-grant:chan"
	ps := b.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		return nil, err
	}
	msgs := ps.Channel()
	var lat []time.Duration
	deadline := time.Now().Add(e.cfg.handoff)
	for len(lat) < e.cfg.handoffN && (len(lat) < minHandoffs || time.Now().Before(deadline)) {
		held := make(chan time.Time, 1)
		go func() {
			<-msgs
			held <- time.Now()
		}()
		time.Sleep(parkDelay + rand.N(parkJitter))
		start := time.Now()
		if err := bareGrantScript.Run(ctx, a, []string{key, channel}, "waiter").Err(); err != nil {
			return nil, err
		}
		lat = append(lat, (<-held).Sub(start))
	}
	return lat, a.Del(ctx, key).Err()
}
