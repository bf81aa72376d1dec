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
		"library", "handoffs", "p50", "p99", "p50 vs redisync")
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
		tb.add(c.name, fmt.Sprint(s.n), dur(s.p50), dur(s.p99), ratio(float64(s.p50), float64(base)))
	}
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
	if c.channel != nil {
		if err := subscribed(ctx, e.ctl, c.channel(key)); err != nil {
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

// subscribed waits until channel has a subscriber.
func subscribed(ctx context.Context, ctl *redis.Client, channel string) error {
	for {
		m, err := ctl.PubSubNumSub(ctx, channel).Result()
		if err != nil || m[channel] > 0 {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}
