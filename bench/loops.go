package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// unlockTimeout bounds a release after the run's ctx is done.
const unlockTimeout = 5 * time.Second

// worker is one goroutine of a loop scenario: think outside the lock for a
// random time in [0, think), acquire, hold for hold, release.
type worker struct {
	role   int // index into loops.roles
	lock   func(ctx context.Context) error
	unlock func(ctx context.Context) error
	think  time.Duration
	hold   time.Duration
}

// loops is a set of workers run side by side for a measured window.
type loops struct {
	workers  []worker
	counters []*counter // of the clients the workers use
	roles    int
	// allowed reports whether the holders counted per role may hold
	// together; it is checked each time one more acquires.
	allowed func(inside []int32) bool
}

// roleStats is what the workers of one role did in the window.
type roleStats struct {
	ops       int64
	waits     []time.Duration // from the lock call to holding
	maxInside int32           // most holders of the role at once
}

// loopsResult is what a loops run measured.
type loopsResult struct {
	elapsed   time.Duration
	cmds      int64  // Redis commands, inside scripts too
	trips     int64  // round trips the clients made
	breakdown string // Redis commands by name, per op
	roles     []roleStats
	maxShare  float64 // the busiest worker's share of all ops
}

func (r loopsResult) ops() int64 {
	var n int64
	for _, s := range r.roles {
		n += s.ops
	}
	return n
}

// run runs the workers for e's warm-up and window, and measures the window.
// A hold the allowed check refuses is an error.
func (l loops) run(ctx context.Context, e *env) (loopsResult, error) {
	r := loopsResult{roles: make([]roleStats, l.roles)}
	var (
		inside     = make([]atomic.Int32, l.roles)
		maxInside  = make([]atomic.Int32, l.roles)
		violations atomic.Int64
		measuring  atomic.Bool
		wg         sync.WaitGroup
		errs       = make(chan error, len(l.workers))
		done       = make([]int64, len(l.workers))
		waits      = make([][]time.Duration, len(l.workers))
	)
	snapshot := func() []int32 {
		s := make([]int32, l.roles)
		for i := range inside {
			s[i] = inside[i].Load()
		}
		return s
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for i, w := range l.workers {
		wg.Go(func() {
			for wctx.Err() == nil {
				if w.think > 0 {
					time.Sleep(rand.N(w.think))
				}
				start := time.Now()
				if err := w.lock(wctx); err != nil {
					if wctx.Err() == nil {
						errs <- err
					}
					return
				}
				waited := time.Since(start)
				n := inside[w.role].Add(1)
				if !l.allowed(snapshot()) {
					violations.Add(1)
				}
				raise(&maxInside[w.role], n)
				if w.hold > 0 {
					time.Sleep(w.hold)
				}
				inside[w.role].Add(-1)
				if measuring.Load() {
					done[i]++
					waits[i] = append(waits[i], waited)
				}
				uctx, cancel := context.WithTimeout(context.WithoutCancel(wctx), unlockTimeout)
				err := w.unlock(uctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	measure := func() (serverStats, counts, error) {
		s, err := readServer(ctx, e.ctl)
		return s, readCounters(l.counters...), err
	}

	sleepCtx(wctx, e.cfg.warmup)
	before, sent, err := measure()
	measuring.Store(true)
	start := time.Now()
	if err == nil {
		sleepCtx(wctx, e.cfg.window)
	}
	measuring.Store(false)
	r.elapsed = time.Since(start)
	after, received, err2 := measure()
	stop()
	wg.Wait()
	close(errs)
	if err := errors.Join(err, err2, <-errs, ctx.Err()); err != nil {
		return r, err
	}
	if n := violations.Load(); n > 0 {
		return r, fmt.Errorf("%d holds broke exclusion", n)
	}
	r.cmds = after.commandsSince(before)
	r.trips = received.sub(sent).trips
	var most int64
	for i, w := range l.workers {
		s := &r.roles[w.role]
		s.ops += done[i]
		s.waits = append(s.waits, waits[i]...)
		most = max(most, done[i])
	}
	for i := range r.roles {
		r.roles[i].maxInside = maxInside[i].Load()
	}
	total := r.ops()
	if total == 0 {
		return r, fmt.Errorf("nothing acquired in %v", e.cfg.window)
	}
	r.maxShare = float64(most) / float64(total)
	r.breakdown = after.breakdown(before, float64(total))
	return r, nil
}

// raise sets a to n if n is larger.
func raise(a *atomic.Int32, n int32) {
	for m := a.Load(); n > m && !a.CompareAndSwap(m, n); m = a.Load() {
	}
}

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
