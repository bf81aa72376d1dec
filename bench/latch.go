// The latch scenario: how long a count-down latch takes to wake a crowd.

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/latch"
)

func init() { scenarios = append(scenarios, scenario{"latch", latchWakeUp}) }

// latchWakeUp parks e.cfg.latchWaiters goroutines, spread over nClients
// clients, in Wait on a latch of count 1, then counts it down from
// another client and measures the time from sending that last CountDown
// until each waiter returned; latchRounds times.
func latchWakeUp(ctx context.Context, e *env) (*table, error) {
	n, rounds := e.cfg.latchWaiters, e.cfg.latchRounds
	rdbs := make([]*redis.Client, nClients)
	var cnts []*counter
	for i := range rdbs {
		var cnt *counter
		rdbs[i], cnt = e.client()
		cnts = append(cnts, cnt)
	}
	counter, _ := e.client()
	var firsts, lasts []time.Duration
	var park time.Duration
	var conns int
	var cmds, trips float64
	for r := range rounds {
		name := fmt.Sprintf("bench:latch:%d", r)
		w, err := parkLatchWaiters(ctx, rdbs, cnts, name, n)
		if err != nil {
			return nil, err
		}
		if conns, err = pubsubClients(ctx, e.ctl); err != nil {
			w.stop()
			return nil, err
		}
		before, err := readServer(ctx, e.ctl)
		if err != nil {
			w.stop()
			return nil, err
		}
		sent := readCounters(cnts...)
		start := time.Now()
		if err := latch.New(counter, name).CountDown(ctx); err != nil {
			w.stop()
			return nil, err
		}
		returned, err := w.wait()
		if err != nil {
			return nil, err
		}
		after, err := readServer(ctx, e.ctl)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(returned, func(a, b time.Time) int { return a.Compare(b) })
		firsts = append(firsts, returned[0].Sub(start))
		lasts = append(lasts, returned[len(returned)-1].Sub(start))
		park += w.took
		// The CountDown's own script is one command of the server's.
		cmds += float64(after.commandsSince(before)-1) / float64(n)
		trips += float64(readCounters(cnts...).sub(sent).trips) / float64(n)
	}
	first, last := summarize(firsts), summarize(lasts)
	tb := newTable(fmt.Sprintf("latch: %d waiters over %d clients, woken by the last CountDown", n, nClients), "measure", "value")
	tb.add("pub/sub connections while parked (CLIENT LIST TYPE pubsub)", fmt.Sprint(conns))
	tb.add("time to park them all", dur(park/time.Duration(rounds)))
	tb.add("last CountDown sent -> first waiter returned (median of rounds)", dur(first.p50))
	tb.add("last CountDown sent -> last waiter returned (median of rounds)", dur(last.p50))
	tb.add("last CountDown sent -> last waiter returned (worst round)", dur(slices.Max(lasts)))
	tb.add("Redis commands per waiter to wake (CountDown not counted)", num(cmds/float64(rounds)))
	tb.add("round trips per waiter to wake (waiters' clients)", num(trips/float64(rounds)))
	tb.note("%d rounds, each on a new latch of count 1 whose waiters had all parked (every one in Wait, "+
		"their clients quiet for 100 ms); the time runs from just before the CountDown is sent until each Wait returned. "+
		"Waiters use the default WithPollInterval (1 s), so a lost wake-up would show as a second.", rounds)
	return tb, nil
}

// latchWaiters is a crowd parked in Wait on one latch.
type latchWaiters struct {
	wg       sync.WaitGroup
	cancel   context.CancelFunc
	mu       sync.Mutex // guards returned and err
	returned []time.Time
	err      error
	took     time.Duration // to park them all
}

// parkLatchWaiters sets the latch called name to 1 and returns once n
// waiters, spread over rdbs, are parked in its Wait.
func parkLatchWaiters(ctx context.Context, rdbs []*redis.Client, cnts []*counter, name string, n int) (*latchWaiters, error) {
	if ok, err := latch.New(rdbs[0], name).TrySetCount(ctx, 1); !ok || err != nil {
		return nil, fmt.Errorf("set the latch: %v, %w", ok, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &latchWaiters{cancel: cancel}
	start := time.Now()
	var started sync.WaitGroup
	started.Add(n)
	for i := range n {
		l := latch.New(rdbs[i%len(rdbs)], name)
		w.wg.Go(func() {
			started.Done()
			err := l.Wait(wctx)
			at := time.Now()
			w.mu.Lock()
			defer w.mu.Unlock()
			w.returned = append(w.returned, at)
			if err != nil && w.err == nil {
				w.err = err
			}
		})
	}
	started.Wait()
	quiet := make([]func() bool, len(cnts))
	var lastTrip []func() time.Time
	for i, c := range cnts {
		var lt func() time.Time
		quiet[i], lt = settled(c)
		lastTrip = append(lastTrip, lt)
	}
	allQuiet := func() bool {
		for _, q := range quiet {
			if !q() {
				return false
			}
		}
		return true
	}
	if err := poll(wctx, parkTimeout, allQuiet); err != nil {
		w.stop()
		return nil, fmt.Errorf("waiters did not park: %w", err)
	}
	for _, lt := range lastTrip {
		w.took = max(w.took, lt().Sub(start))
	}
	return w, nil
}

// wait waits for every waiter and returns when each returned, or the
// first error.
func (w *latchWaiters) wait() ([]time.Time, error) {
	w.wg.Wait()
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.returned, w.err
}

// stop ends the waiters still waiting.
func (w *latchWaiters) stop() {
	w.cancel()
	w.wg.Wait()
}
