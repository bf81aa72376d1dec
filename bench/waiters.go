package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/redisync/redisync/rlock"
)

// parkTimeout bounds how long the waiters may take to park.
const parkTimeout = 2 * time.Minute

// waiters parks many goroutines, each with its own handle, on locks held
// by another client, and measures what they cost while parked: pub/sub
// connections and memory. Then the holders unlock and every waiter takes
// its lock in turn.
func waiters(ctx context.Context, e *env) (*table, error) {
	nw, nl := e.cfg.waiters, e.cfg.waitLocks
	key := func(i int) string { return fmt.Sprintf("bench:waiters:%d", i%nl) }
	hrdb, _ := e.client()
	holders := make([]*rlock.Mutex, nl)
	for i := range holders {
		holders[i] = rlock.New(hrdb, key(i))
	}
	defer unlockAll(ctx, holders)
	if err := forEach(ctx, nl, func(i int) error { return holders[i].Lock(ctx) }); err != nil {
		return nil, err
	}

	wrdb, cnt := e.client()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	sent := readCounters(cnt)
	wctx, stop := context.WithCancel(ctx)
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 1)
	)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
		stop()
	}
	start := time.Now()
	for i := range nw {
		wg.Go(func() {
			m := rlock.New(wrdb, key(i))
			if err := m.Lock(wctx); err != nil {
				if wctx.Err() == nil {
					report(err)
				}
				return
			}
			if err := m.Unlock(context.WithoutCancel(wctx)); err != nil {
				report(err)
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
	}()

	// Parked: every waiter has tried, subscribed, and tried again.
	parked := func() bool { return readCounters(cnt).sub(sent).trips >= int64(2*nw) }
	if err := poll(wctx, parkTimeout, parked); err != nil {
		return nil, fmt.Errorf("waiters did not park: %w", err)
	}
	park := time.Since(start)
	if err := poll(wctx, parkTimeout, settled(cnt)); err != nil {
		return nil, err
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	attempts := float64(readCounters(cnt).sub(sent).trips) / float64(nw)
	conns, err := pubsubClients(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	heap := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(nw)
	stack := float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / float64(nw)
	e.set("waiters", "redisync rlock", "conns", float64(conns))
	e.set("waiters", "redisync rlock", "heap", heap)

	// Release: each lock passes through its waiters one after another.
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	sent = readCounters(cnt)
	start = time.Now()
	unlockAll(ctx, holders)
	wg.Wait()
	drain := time.Since(start)
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := readCounters(cnt).sub(sent)

	tb := newTable(fmt.Sprintf("Waiters: %d goroutines on one client waiting on %d locks held by another", nw, nl),
		"measure", "value")
	tb.add("pub/sub connections (CLIENT LIST TYPE pubsub)", fmt.Sprint(conns))
	tb.add("heap per waiter (MemStats.HeapAlloc delta)", fmt.Sprintf("%.0f B", heap))
	tb.add("goroutine stack per waiter (StackInuse delta)", fmt.Sprintf("%.0f B", stack))
	tb.add("acquire attempts per waiter before parking", num(attempts))
	tb.add("time to park them all", dur(park))
	tb.add("release: time until every waiter held and released its lock", dur(drain))
	tb.add("release: Redis commands per acquisition", num(float64(after.commandsSince(before))/float64(nw)))
	tb.add("release: round trips per acquisition (waiting client)", num(float64(d.trips)/float64(nw)))
	tb.note("Heap and stack deltas after runtime.GC(), from before the waiters' handles were created until all were parked; they include the handles.")
	return tb, nil
}

// poll checks cond every 10ms until it holds, ctx is done or within has
// passed.
func poll(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// settled returns a condition that holds once cnt saw no round trip for
// 100ms.
func settled(cnt *counter) func() bool {
	var (
		last  int64
		since time.Time
	)
	return func() bool {
		if n := cnt.trips.Load(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 100*time.Millisecond
	}
}
