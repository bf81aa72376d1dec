package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// burst is how many Lock+Unlock pairs one library runs before the next
// takes its turn.
const burst = 32

// uncontendedTotal is what one library did.
type uncontendedTotal struct {
	ops     int
	elapsed time.Duration
	bursts  []float64 // ns/op of each burst
	trips   float64   // per op
	cmds    float64   // per op
	usecs   []float64 // per op, Redis's time in each sampled burst (see serverTurn)
}

// usec is the median of the samples of Redis's time per op.
func (t uncontendedTotal) usec() float64 { return median(t.usecs) }

// ns is the median of the bursts' ns/op: a burst that the machine's other
// load fell on does not move it, as it moves a mean.
func (t uncontendedTotal) ns() float64 { return median(t.bursts) }

// median returns the median of v, 0 for none.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// uncontended is scenario 1: one handle locks and unlocks a lock nobody
// else wants. The libraries take turns in short bursts, so that load from
// elsewhere on the machine falls on all of them alike.
func uncontended(ctx context.Context, e *env) (*table, error) {
	rdb, cnt := e.client()
	totals := make([]uncontendedTotal, len(contenders))
	lockers := make([]locker, len(contenders))
	for i, c := range contenders {
		lockers[i] = c.newLocker(rdb, "bench:uncontended:"+c.name)
		// Warm up (load the scripts, open the connection), then count
		// what a Lock+Unlock costs Redis.
		if _, err := lockUnlock(ctx, lockers[i], 100); err != nil {
			return nil, err
		}
		if err := totals[i].count(ctx, e, lockers[i], cnt); err != nil {
			return nil, err
		}
	}
	own := make([]bool, len(contenders))
	for i, c := range contenders {
		own[i] = c.ownClient
	}
	if err := takeTurns(ctx, e, lockers, totals, e.cfg.uncontended, cnt, own); err != nil {
		return nil, err
	}

	tb := newTable("1. Uncontended Lock+Unlock",
		"library", "ns/op", "vs bare", "round trips/op", "Redis commands/op", "server µs/op", "server vs bare", "server vs Redisson alg.")
	var bare, bareUsec, redissonUsec float64
	for i, c := range contenders {
		if c.bare {
			bare, bareUsec = totals[i].ns(), totals[i].usec()
		}
		if c.name == redissonAlg {
			redissonUsec = totals[i].usec()
		}
	}
	for i, c := range contenders {
		t := totals[i]
		e.set("uncontended", c.name, "ns", t.ns())
		e.set("uncontended", c.name, "usec", t.usec())
		trips := num(t.trips)
		if c.ownClient {
			trips = "-"
		}
		tb.add(c.name, num(t.ns()), ratio(t.ns(), bare), trips, num(t.cmds), usecs(t.usec()), ratio(t.usec(), bareUsec), ratio(t.usec(), redissonUsec))
	}
	tb.note("About %v per library, in turns of %d Lock+Unlock; ns/op is the median of the turns. Redis commands from INFO commandstats, counting those run inside scripts. "+
		"Server µs/op is the time Redis spent running the commands (commandstats usec), each once (a script's time includes the commands it calls), the median of bursts read every %d turns. "+
		"\"rlock scripts alone\" runs rlock's two scripts straight from go-redis: the difference to redisync rlock is what the library costs in Go. "+
		"\"Redisson algorithm\" is Redisson's reentrant lock as it is published (a hash of hold counts by owner), in two scripts written for this page.",
		e.cfg.uncontended, burst, serverEvery)
	// Issue 41's two ratios, with their targets: no column compares the
	// fenced row with rlock's, and a ratio reads better beside its goal.
	var issue41 []string
	if r, ok := ratioOf(e, "uncontended", "usec", us, redissonAlg); ok {
		issue41 = append(issue41, fmt.Sprintf("redisync rlock's is %.2fx the Redisson algorithm's (target: at most 0.8x)", r))
	}
	if r, ok := ratioOf(e, "uncontended", "usec", guardedFloor, redissonAlg); ok {
		issue41 = append(issue41, fmt.Sprintf("the least two scripts cost that make rlock's checks (\"%s\") are %.2fx the Redisson algorithm's", guardedFloor, r))
	}
	if r, ok := ratioOf(e, "uncontended", "usec", usFenced, us); ok {
		issue41 = append(issue41, fmt.Sprintf("redisync rlock's with fencing is %.2fx its own without (target: at most 1.15x)", r))
	}
	if len(issue41) > 0 {
		tb.note("Server µs per Lock+Unlock: %s.", strings.Join(issue41, "; "))
	}
	return tb, nil
}

// usecs formats microseconds of server time.
func usecs(v float64) string { return fmt.Sprintf("%.1f", v) }

// takeTurns runs Lock+Unlock on each of lockers for about d each, in
// bursts, adding to totals. Every serverEvery-th turn it also reads the
// server's time around each library's burst (see serverTurn), when cnt,
// the counter of the lockers' client, is set; own[i] marks a library on
// a client of its own (nil: none).
func takeTurns(ctx context.Context, e *env, lockers []locker, totals []uncontendedTotal, d time.Duration, cnt *counter, own []bool) error {
	deadline := time.Now().Add(d * time.Duration(len(lockers)))
	for turn := 0; time.Now().Before(deadline); turn++ {
		for j := range lockers {
			i := (turn + j) % len(lockers) // who goes first rotates
			if cnt != nil && turn%serverEvery == 0 {
				if err := totals[i].serverTurn(ctx, e, lockers[i], cnt, own != nil && own[i]); err != nil {
					return err
				}
			}
			start := time.Now()
			n, err := lockUnlock(ctx, lockers[i], burst)
			if err != nil {
				return err
			}
			took := time.Since(start)
			totals[i].elapsed += took
			totals[i].ops += n
			if n > 0 {
				totals[i].bursts = append(totals[i].bursts, float64(took.Nanoseconds())/float64(n))
			}
		}
	}
	return nil
}

// serverEvery is how often, in turns, takeTurns measures the server's
// time per op.
const serverEvery = 4

// serverTurn runs a burst of Lock+Unlock of l between two readings of
// the server's commandstats, adding a sample of its time per op. The
// median of such samples, taken in turns with the other libraries, is
// what the table shows: Redis's time of a command counts the moments its
// process was not on a CPU, and this machine's other load comes and goes.
func (t *uncontendedTotal) serverTurn(ctx context.Context, e *env, l locker, cnt *counter, ownClient bool) error {
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	startNaming(cnt)
	n, err := lockUnlock(ctx, l, burst)
	named := stopNaming(cnt)
	if err != nil {
		return err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	t.usecs = append(t.usecs, after.usecSince(before, named, ownClient)/float64(n))
	return nil
}

// count measures the round trips and Redis commands of a Lock+Unlock of l.
func (t *uncontendedTotal) count(ctx context.Context, e *env, l locker, cnt *counter) error {
	before, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	sent := readCounters(cnt)
	n, err := lockUnlock(ctx, l, 100)
	if err != nil {
		return err
	}
	after, err := readServer(ctx, e.ctl)
	if err != nil {
		return err
	}
	t.trips = float64(readCounters(cnt).sub(sent).trips) / float64(n)
	t.cmds = float64(after.commandsSince(before)) / float64(n)
	return nil
}

// lockUnlock locks and unlocks l n times and returns how many times it did.
// It stops when ctx ends, whatever a locker does with a ctx that has ended.
func lockUnlock(ctx context.Context, l locker, n int) (int, error) {
	for done := range n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		if err := l.Lock(ctx); err != nil {
			return done, err
		}
		if err := l.Unlock(ctx); err != nil {
			return done, err
		}
	}
	return n, nil
}
