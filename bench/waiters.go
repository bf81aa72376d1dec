package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
)

// parkTimeout bounds how long the waiters may take to park.
const parkTimeout = 2 * time.Minute

// parkedWindow is how long the waiters' cost while parked is measured:
// a few periods of the refresh of their places in line.
const parkedWindow = 3 * time.Second

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

	rdb, cnt := e.client()
	p := &parking{rdb: rdb, cnt: cnt, key: key}
	defer p.stop()
	if err := p.park(ctx, nw); err != nil {
		return nil, err
	}
	conns, err := pubsubClients(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	e.set("waiters", us, "conns", float64(conns))
	e.set("waiters", us, "heap", p.heap)

	// While parked: what keeping every waiter's place in line costs the
	// server and the client.
	idleCmds, idleTrips, err := parkedCost(ctx, e, cnt)
	if err != nil {
		return nil, err
	}

	// Release: each lock passes through its waiters one after another.
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	sent := readCounters(cnt)
	start := time.Now()
	unlockAll(ctx, holders)
	if err := p.wait(); err != nil {
		return nil, err
	}
	drain := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	trips := readCounters(cnt).sub(sent).trips

	tb := newTable(fmt.Sprintf("Waiters: %d goroutines on one client waiting on %d locks held by another", nw, nl),
		"measure", "value")
	tb.add("pub/sub connections (CLIENT LIST TYPE pubsub)", fmt.Sprint(conns))
	tb.add("heap per waiter (MemStats.HeapAlloc delta)", fmt.Sprintf("%.0f B", p.heap))
	tb.add("goroutine stack per waiter (StackInuse delta)", fmt.Sprintf("%.0f B", p.stack))
	tb.add("acquire attempts per waiter before parking", num(p.attempts))
	tb.add("time to park them all", dur(p.took))
	tb.add("while parked: Redis commands per second", num(idleCmds))
	tb.add("while parked: round trips per second (waiting client)", num(idleTrips))
	tb.add("release: time until every waiter held and released its lock", dur(drain))
	tb.add("release: Redis commands per acquisition", num(float64(after.commandsSince(before))/float64(nw)))
	tb.add("release: round trips per acquisition (waiting client)", num(float64(trips)/float64(nw)))
	tb.note("Heap and stack deltas after runtime.GC(), from before the waiters' handles were created until all were parked; they include the handles.")
	tb.note("While parked: over %v once all were parked, Redis commands from INFO commandstats (counting those run inside scripts); the client refreshes every parked waiter's place in line, in one pipeline a second.", parkedWindow)
	return tb, nil
}

// parkedCost measures, over parkedWindow (a few refresh periods), the
// Redis commands a second the server runs and the round trips a second
// the waiting client cnt sends while its waiters are parked.
func parkedCost(ctx context.Context, e *env, cnt *counter) (cmds, trips float64, err error) {
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return 0, 0, err
	}
	sent := readCounters(cnt)
	start := time.Now()
	select {
	case <-time.After(parkedWindow):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return 0, 0, err
	}
	secs := time.Since(start).Seconds()
	return float64(after.commandsSince(before)) / secs, float64(readCounters(cnt).sub(sent).trips) / secs, nil
}

// parking is a crowd of goroutines, each locking and unlocking once.
type parking struct {
	rdb redis.UniversalClient
	cnt *counter
	key func(i int) string
	// Optional: held is called by waiter i once it holds its lock;
	// subscribed is a further condition for park to count them parked
	// (evaluated only once the client has gone quiet).
	held       func(i int)
	subscribed func() bool

	started atomic.Int64 // waiters that have called Lock
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	errs    chan error

	// Measured by park.
	heap, stack float64 // bytes per waiter
	attempts    float64 // round trips per waiter
	took        time.Duration
}

// park starts n waiters and returns once all have parked: each has tried,
// subscribed and tried again, and the client has gone quiet.
func (p *parking) park(ctx context.Context, n int) error {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	sent := readCounters(p.cnt)
	wctx, cancel := context.WithCancel(ctx)
	p.cancel, p.errs = cancel, make(chan error, 1)
	start := time.Now()
	for i := range n {
		p.wg.Go(func() { p.waiter(wctx, i) })
	}
	// Parked: every waiter has called Lock and the client has gone quiet.
	// (How many attempts a waiter makes depends on whether it found others
	// of the client parked on its lock, so counting them cannot tell.)
	quiet, lastTrip := settled(p.cnt)
	parked := func() bool {
		return p.started.Load() == int64(n) && quiet() && (p.subscribed == nil || p.subscribed())
	}
	if err := poll(wctx, parkTimeout, parked); err != nil {
		return fmt.Errorf("waiters did not park: %w", err)
	}
	p.took = lastTrip().Sub(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	p.heap = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(n)
	p.stack = float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / float64(n)
	p.attempts = float64(readCounters(p.cnt).sub(sent).trips) / float64(n)
	return nil
}

// waiter is waiter i: lock, unlock, done. The first error stops them all.
func (p *parking) waiter(ctx context.Context, i int) {
	m := rlock.New(p.rdb, p.key(i))
	p.started.Add(1)
	err := m.Lock(ctx)
	if err == nil && p.held != nil {
		p.held(i)
	}
	if err == nil {
		err = m.Unlock(context.WithoutCancel(ctx))
	} else if ctx.Err() != nil {
		return
	}
	if err != nil {
		select {
		case p.errs <- err:
		default:
		}
		p.cancel()
	}
}

// wait waits for every waiter and returns the first error.
func (p *parking) wait() error {
	p.wg.Wait()
	select {
	case err := <-p.errs:
		return err
	default:
		return nil
	}
}

// stop ends the waiters still waiting.
func (p *parking) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
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
// 100ms, counted from the call to settled at the earliest, and the time of
// the last round trip it saw.
func settled(cnt *counter) (quiet func() bool, lastTrip func() time.Time) {
	last, since := cnt.trips.Load(), time.Now()
	quiet = func() bool {
		if n := cnt.trips.Load(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 100*time.Millisecond
	}
	return quiet, func() time.Time { return since }
}
