package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	scenarios = append(scenarios, scenario{"many-locks", manyLocks})
}

// The shape of the many-locks scenario: how many distinct lock names, and
// the goroutines and clients that lock them.
const (
	manyNames   = 10000
	manyWorkers = 64
	manyClients = 8
	// manyLockTimeout bounds every Lock of the scenario.
	manyLockTimeout = 10 * time.Second
)

// manyLocks is how one Redis serves many locks that nobody contends, the
// common case of per-entity locks: 64 goroutines over 8 clients lock and
// unlock 10,000 distinct names, each goroutine names of its own, so no
// Lock ever waits. What bounds it is the server (every library keeps its
// CPU busy) and the client machine; the table gives the pairs per second
// and what each costs Redis.
func manyLocks(ctx context.Context, e *env) (*table, error) {
	tb := newTable(fmt.Sprintf("many locks: %d names, %d goroutines over %d clients, uncontended", manyNames, manyWorkers, manyClients),
		"library", "Lock+Unlock/s", "vs bare", "server µs/op", "server vs bare", "Redis commands/op")
	type row struct {
		name      string
		perSec    float64
		usec, cmd float64
		err       error
	}
	var rows []row
	var bare row
	for _, c := range contenders {
		if c.name == usShared {
			continue // one handle per name and client: the same as rlock here
		}
		r, err := manyRun(ctx, e, c)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			// One library's failure is its row's, not the scenario's.
			rows = append(rows, row{name: c.name, err: err})
			continue
		}
		rows = append(rows, row{name: c.name, perSec: r.perSec, usec: r.usec, cmd: r.cmds})
		if c.bare {
			bare = rows[len(rows)-1]
		}
		e.set("many-locks", c.name, "ops/s", r.perSec)
		e.set("many-locks", c.name, "usec", r.usec)
		e.closeClients()
		closeContenders()
		// The next library starts from an empty server.
		if err := e.ctl.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
	}
	for _, r := range rows {
		if r.err != nil {
			tb.add(r.name, "failed", "-", "-", "-", "-")
			tb.note("%s failed: %v", r.name, r.err)
			continue
		}
		tb.add(r.name, num(r.perSec), ratio(r.perSec, bare.perSec), usecs(r.usec), ratio(r.usec, bare.usec), num(r.cmd))
	}
	tb.note("About %v per library after %v of warm-up; each goroutine locks and unlocks its own %d names in turn. "+
		"Server µs/op as in scenario 1 (commandstats usec, each command once), over the measured window; an op is one Lock+Unlock.",
		e.cfg.many, e.cfg.warmup, manyNames/manyWorkers)
	return tb, nil
}

// manyResult is what one library did in the many-locks scenario.
type manyResult struct {
	perSec, usec, cmds float64
}

// manyRun runs the many-locks scenario for c.
func manyRun(ctx context.Context, e *env, c contender) (manyResult, error) {
	counters := make([]*counter, manyClients)
	lockers := make([][]locker, manyWorkers)
	for i := range manyClients {
		rdb, cnt := e.client()
		counters[i] = cnt
		for w := i; w < manyWorkers; w += manyClients {
			for n := w; n < manyNames; n += manyWorkers {
				lockers[w] = append(lockers[w], c.newLocker(rdb, fmt.Sprintf("bench:many:%d", n)))
			}
		}
	}
	var measuring, stop atomic.Bool
	var ops atomic.Int64
	errs := make(chan error, manyWorkers)
	var wg sync.WaitGroup
	for _, mine := range lockers {
		// The workers stop between pairs rather than by a cancelled ctx:
		// a command cut short would be counted, and leave a hold behind
		// for the next library.
		wg.Go(func() {
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				l := mine[i%len(mine)]
				// Nothing contends: a Lock that waits this long is a
				// library stuck (rueidislock once, under -race), which
				// its row reports rather than hang the run.
				lctx, cancel := context.WithTimeout(ctx, manyLockTimeout)
				err := l.Lock(lctx)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("lock %d: %w", i%len(mine), err)
					return
				}
				if err := l.Unlock(ctx); err != nil {
					errs <- err
					return
				}
				if measuring.Load() {
					ops.Add(1)
				}
			}
		})
	}
	res, err := manyWindow(ctx, e, counters, c.ownClient, &measuring, &ops, errs)
	stop.Store(true)
	wg.Wait()
	return res, err
}

// manyWindow waits out the warm-up, then measures for e.cfg.many while
// the workers run.
func manyWindow(ctx context.Context, e *env, counters []*counter, ownClient bool, measuring *atomic.Bool, ops *atomic.Int64, errs <-chan error) (manyResult, error) {
	var r manyResult
	pause := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	if err := pause(e.cfg.warmup); err != nil {
		return r, err
	}
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return r, err
	}
	startNaming(counters...)
	start := time.Now()
	measuring.Store(true)
	err = pause(e.cfg.many)
	measuring.Store(false)
	elapsed := time.Since(start)
	named := stopNaming(counters...)
	if err != nil {
		return r, err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return r, err
	}
	n := float64(ops.Load())
	if n == 0 {
		return r, fmt.Errorf("no Lock+Unlock in %v", elapsed)
	}
	r.perSec = n / elapsed.Seconds()
	r.usec = after.usecSince(before, named, ownClient) / n
	r.cmds = float64(after.commandsSince(before)) / n
	return r, nil
}
