package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/rwlock"
)

func init() { scenarios = append(scenarios, scenario{"rwlock-parked", rwParked}) }

// The crowd rwParked parks behind a write hold: readers and writers, each
// with its own handle, all on one client.
const (
	parkedReaders = 900
	parkedWriters = 100
)

// rwParked parks readers and writers of one client behind a write hold
// held by another, and measures what they cost while parked, when all
// their client does is keep their announcements (WriterPatience). Then
// the hold ends and every waiter takes the lock once: the readers
// together, then the writers one by one.
func rwParked(ctx context.Context, e *env) (*table, error) {
	const key = "bench:rw-parked"
	hrdb, _ := e.client()
	holder := rwlock.New(hrdb, key)
	if err := holder.Lock(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = holder.Unlock(context.WithoutCancel(ctx)) }() // ErrNotHeld once released below

	rdb, cnt := e.client()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := parkedReaders + parkedWriters
	var started atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rw := rwlock.New(rdb, key)
			lock, unlock := rw.RLock, rw.RUnlock
			if i < parkedWriters {
				lock, unlock = rw.Lock, rw.Unlock
			}
			started.Add(1)
			err := lock(wctx)
			if err == nil {
				err = unlock(context.WithoutCancel(wctx))
			}
			if err != nil && wctx.Err() == nil {
				errs <- err
			}
		})
	}
	// Deferred after cancel, so it runs before it: cancel first, or a
	// return before the release below waits forever for waiters parked
	// behind the holder.
	defer func() {
		cancel()
		wg.Wait()
	}()
	quiet, _ := settled(cnt)
	if err := poll(wctx, parkTimeout, func() bool { return started.Load() == int64(n) && quiet() }); err != nil {
		return nil, fmt.Errorf("rwlock waiters did not park: %w", err)
	}

	cmds, trips, err := parkedCost(ctx, e, cnt)
	if err != nil {
		return nil, err
	}
	e.set("rwlock-parked", "redisync rwlock", "cmds/s", cmds)

	drainStart := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-errs:
		return nil, err
	case <-time.After(parkTimeout):
		return nil, fmt.Errorf("rwlock waiters did not all get the lock within %v", parkTimeout)
	}
	drain := time.Since(drainStart)
	select {
	case err := <-errs:
		return nil, err
	default:
	}

	tb := newTable(fmt.Sprintf("rwlock: %d readers and %d writers of one client parked behind a write hold", parkedReaders, parkedWriters),
		"measure", "value")
	tb.add("while parked: Redis commands per second", num(cmds))
	tb.add("while parked: round trips per second (waiting client)", num(trips))
	tb.add("release: time until every waiter held and released the lock", dur(drain))
	tb.note("While parked: over %v once all were parked, Redis commands from INFO commandstats (counting those run inside scripts). The client keeps every parked waiter's announcement alive (rwlock.WaiterTimeout), in one pipeline a second.", parkedWindow)
	return tb, nil
}
