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
	busy   bool // hold by spinning, not sleeping
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
	held      time.Duration   // the critical sections' time, all together
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
	st := newLoopState(l)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i, w := range l.workers {
		wg.Go(func() { st.work(wctx, i, w) })
	}
	measure := func() (serverStats, counts, error) {
		s, err := readServer(ctx, e.ctl)
		return s, readCounters(l.counters...), err
	}
	sleepCtx(wctx, e.cfg.warmup)
	before, sent, err := measure()
	st.measuring.Store(true)
	start := time.Now()
	if err == nil {
		sleepCtx(wctx, e.cfg.window)
	}
	st.measuring.Store(false)
	elapsed := time.Since(start)
	after, received, err2 := measure()
	stop()
	wg.Wait()
	close(st.errs)
	if err := errors.Join(err, err2, <-st.errs, ctx.Err()); err != nil {
		return loopsResult{}, err
	}
	if n := st.violations.Load(); n > 0 {
		return loopsResult{}, fmt.Errorf("%d holds broke exclusion", n)
	}
	r := st.result()
	if r.ops() == 0 {
		return r, fmt.Errorf("nothing acquired in %v", e.cfg.window)
	}
	r.elapsed = elapsed
	r.cmds = after.commandsSince(before)
	r.trips = received.sub(sent).trips
	r.breakdown = after.breakdown(before, float64(r.ops()))
	return r, nil
}

// loopState is shared by the workers of one run.
type loopState struct {
	l          loops
	inside     []atomic.Int32 // current holders per role
	maxInside  []atomic.Int32
	violations atomic.Int64
	measuring  atomic.Bool
	errs       chan error
	// Per worker, each written only by its worker and read after it ended.
	done  []int64
	waits [][]time.Duration
	held  []time.Duration
}

func newLoopState(l loops) *loopState {
	return &loopState{
		l:         l,
		inside:    make([]atomic.Int32, l.roles),
		maxInside: make([]atomic.Int32, l.roles),
		errs:      make(chan error, len(l.workers)),
		done:      make([]int64, len(l.workers)),
		waits:     make([][]time.Duration, len(l.workers)),
		held:      make([]time.Duration, len(l.workers)),
	}
}

// work is worker i's loop, until ctx is done or an error.
func (st *loopState) work(ctx context.Context, i int, w worker) {
	for ctx.Err() == nil {
		if w.think > 0 {
			time.Sleep(rand.N(w.think))
		}
		start := time.Now()
		if err := w.lock(ctx); err != nil {
			if ctx.Err() == nil {
				st.errs <- err
			}
			return
		}
		waited := time.Since(start)
		st.enter(w.role)
		if w.hold > 0 {
			holdFor(w.hold, w.busy)
		}
		held := time.Since(start) - waited
		st.inside[w.role].Add(-1)
		if st.measuring.Load() {
			st.done[i]++
			st.waits[i] = append(st.waits[i], waited)
			st.held[i] += held
		}
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		err := w.unlock(uctx)
		cancel()
		if err != nil {
			st.errs <- err
			return
		}
	}
}

// enter counts one more holder of role and checks the holders allowed.
func (st *loopState) enter(role int) {
	n := st.inside[role].Add(1)
	snapshot := make([]int32, len(st.inside))
	for i := range st.inside {
		snapshot[i] = st.inside[i].Load()
	}
	if !st.l.allowed(snapshot) {
		st.violations.Add(1)
	}
	raise(&st.maxInside[role], n)
}

// result gathers the per-worker counts by role.
func (st *loopState) result() loopsResult {
	r := loopsResult{roles: make([]roleStats, st.l.roles)}
	var most int64
	for i, w := range st.l.workers {
		s := &r.roles[w.role]
		s.ops += st.done[i]
		s.waits = append(s.waits, st.waits[i]...)
		s.held += st.held[i]
		most = max(most, st.done[i])
	}
	for i := range r.roles {
		r.roles[i].maxInside = st.maxInside[i].Load()
	}
	if total := r.ops(); total > 0 {
		r.maxShare = float64(most) / float64(total)
	}
	return r
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
