package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/cmdstats"
	"github.com/redisync/redisync/internal/errs"
)

const benchAbout = `
Measures what the locks cost on the deployment it points at. --goroutines
workers spread over --instances clients lock one of --locks locks, hold it
for --hold, and unlock, for --duration per primitive. It checks that no two
workers ever hold the same lock at once, and prints one row per primitive:
lock+unlock cycles per second, the handoff latency (from a holder starting
Unlock to the next holder's Lock returning, p50 and p99) and the Redis
commands per cycle from INFO commandstats, those run inside scripts included,
with the script calls among them, and the microseconds Redis spent on them
per cycle (commandstats usec, each command once: a script's time includes
that of the commands it calls); n/a on miniredis, which does not count
them; on a busy server other clients' commands count too.

Progress goes to stderr: one line rewritten in place on a terminal, a line a
second otherwise. Every key is deleted at the end.`

// benchFlags are the flags of the bench command.
type benchFlags struct {
	conn       *connFlags
	kinds      string
	locks      int
	goroutines int
	instances  int
	duration   time.Duration
	hold       time.Duration
}

// benchResult is the outcome for one primitive.
type benchResult struct {
	kind       string
	ops        int64
	elapsed    time.Duration
	handoffs   []time.Duration // sorted
	cmds       int64           // commands the servers ran meanwhile, inside scripts too
	scripts    int64           // the script calls among them
	callsKnown bool
	usec       float64 // microseconds Redis spent on them (cmdstats.Stats.Usec)
	violations int64   // times two workers held one lock
}

func runBench(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "bench", "bench [flags]", benchAbout)
	f := &benchFlags{conn: addConnFlags(fs, true)}
	available := benchPrimitives()
	fs.StringVar(&f.kinds, "kinds", primitiveNames(available), "primitives to run, comma-separated")
	fs.IntVar(&f.locks, "locks", 1, "locks the workers share")
	fs.IntVar(&f.goroutines, "goroutines", 16, "workers, each with its own handle")
	fs.IntVar(&f.instances, "instances", 4, "Redis clients the workers are spread over")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "how long each primitive runs")
	fs.DurationVar(&f.hold, "hold", 0, "how long a worker holds the lock")
	rest, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("unexpected argument %q", rest[0])
	}
	kinds, err := f.check(available)
	if err != nil {
		return err
	}
	t, err := f.conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	instances := t.clientsN(f.instances)
	sent := &cmdstats.Sent{} // tells the commands sent from those run inside scripts
	for _, rdb := range instances {
		rdb.AddHook(sent)
	}
	fmt.Fprintf(out.stdout, "redisync bench on %s: %d goroutines on %d clients, %d lock(s), hold %v, %v per primitive\n\n",
		t.desc, f.goroutines, f.instances, f.locks, f.hold, f.duration)
	prefix := runPrefix("bench")
	// The yardstick of the handoff column, measured on the same target.
	floor, err := bareGrant(ctx, instances[0], instances[len(instances)-1], prefix)
	if err != nil {
		fmt.Fprintf(out.stderr, "bare grant not measured: %v\n", err)
		floor = 0
	}
	var results []benchResult
	var runErr error
	for _, p := range kinds {
		r, err := benchOne(ctx, out, f, p, instances, prefix, sent)
		results = append(results, r)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", p.name, err)
			break
		}
	}
	writeBenchTable(out, results, floor)
	if err := cleanupRun(ctx, instances[0], prefix); err != nil {
		runErr = errors.Join(runErr, err)
	}
	for _, r := range results {
		if r.violations > 0 {
			runErr = errors.Join(runErr, fmt.Errorf("%s: two holders at once %d times: mutual exclusion violated", r.kind, r.violations))
		}
	}
	return runErr
}

// benchPrimitives are the primitives that can run as a mutex.
func benchPrimitives() []primitive {
	var ps []primitive
	for _, p := range primitives() {
		if p.newMutex != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

func (f *benchFlags) check(available []primitive) ([]primitive, error) {
	switch {
	case f.locks < 1:
		return nil, usagef("--locks %d: want at least 1", f.locks)
	case f.goroutines < 1:
		return nil, usagef("--goroutines %d: want at least 1", f.goroutines)
	case f.instances < 1 || f.instances > 64:
		return nil, usagef("--instances %d: want 1 to 64", f.instances)
	case f.duration <= 0:
		return nil, usagef("--duration %v: want more than 0", f.duration)
	case f.hold < 0:
		return nil, usagef("--hold %v: must not be negative", f.hold)
	}
	var kinds []primitive
	for _, name := range strings.Split(f.kinds, ",") {
		i := slices.IndexFunc(available, func(p primitive) bool { return p.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, usagef("--kinds: unknown primitive %q (built in: %s)", name, primitiveNames(available))
		}
		kinds = append(kinds, available[i])
	}
	return kinds, nil
}

// benchLock is one lock's shared bookkeeping.
type benchLock struct {
	name       string
	holders    atomic.Int64  // workers inside the critical section
	released   atomic.Int64  // UnixNano when the last holder started Unlock; 0: taken
	violations *atomic.Int64 // times a worker found another one inside
}

// benchOne runs one primitive for the configured duration.
// sent counts the commands the instances send.
func benchOne(ctx context.Context, out *output, f *benchFlags, p primitive, instances []redis.UniversalClient, prefix string, sent *cmdstats.Sent) (benchResult, error) {
	res := benchResult{kind: p.name}
	var ops, violations atomic.Int64
	locks := make([]*benchLock, f.locks)
	for i := range locks {
		locks[i] = &benchLock{name: fmt.Sprintf("%sbench:%s:%d", prefix, p.name, i), violations: &violations}
		if p.prepare != nil {
			if err := p.prepare(ctx, instances[0], locks[i].name); err != nil {
				return res, err
			}
		}
	}
	before, known := commandCalls(ctx, instances[0])
	sent.Take()
	prog := startProgress(out.stderr, p.name, f.duration, ops.Load)
	began := time.Now()
	handoffs, err := benchWorkers(ctx, f, p, locks, instances, &ops)
	res.elapsed = time.Since(began)
	prog.finish()
	after, knownAfter := commandCalls(context.WithoutCancel(ctx), instances[0]) // also after ctrl-C
	res.ops, res.violations, res.handoffs = ops.Load(), violations.Load(), handoffs
	res.cmds = after.Calls() - before.Calls()
	res.scripts = after.ScriptCalls() - before.ScriptCalls()
	res.callsKnown = known && knownAfter
	res.usec = after.Since(before).Usec(sent.Take())
	if err != nil {
		return res, err
	}
	return res, context.Cause(ctx) // interrupted: report what ran, then stop
}

// benchWorkers runs the workers for f.duration, counting cycles in ops.
// It returns the handoff latencies, sorted, and the first error.
func benchWorkers(ctx context.Context, f *benchFlags, p primitive, locks []*benchLock, instances []redis.UniversalClient, ops *atomic.Int64) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	var mu sync.Mutex // protects failed
	var failed error
	lat := make([][]time.Duration, f.goroutines)
	var wg sync.WaitGroup
	for w := range f.goroutines {
		l, rdb := locks[w%len(locks)], instances[w%len(instances)]
		m := p.newMutex(rdb, l.name)
		wg.Go(func() {
			for ctx.Err() == nil {
				d, err := benchCycle(ctx, m, l, f.hold)
				// The run's end is its deadline, which a call can see pass
				// a moment before ctx's own timer says so.
				if err != nil && errs.CtxDone(ctx) == nil {
					mu.Lock()
					failed = cmp.Or(failed, err)
					mu.Unlock()
					cancel()
				}
				if err != nil {
					return
				}
				if d > 0 {
					lat[w] = append(lat[w], d)
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all, failed
}

// benchCycle locks m, holds it for hold and unlocks it. It returns the
// handoff latency when the lock came from a previous holder.
func benchCycle(ctx context.Context, m mutex, l *benchLock, hold time.Duration) (time.Duration, error) {
	var handoff time.Duration
	err := locked(ctx, m, func() error {
		if r := l.released.Swap(0); r != 0 {
			handoff = time.Duration(time.Now().UnixNano() - r)
		}
		if l.holders.Add(1) > 1 {
			l.violations.Add(1)
		}
		_ = pause(ctx, hold) // the end of the run may cut the hold short
		l.holders.Add(-1)
		l.released.Store(time.Now().UnixNano())
		return nil
	})
	return handoff, err
}

// writeBenchTable prints the results; floor is the bare grant's median
// (0: not measured), the yardstick of the p50 handoff.
func writeBenchTable(out *output, results []benchResult, floor time.Duration) {
	tab := newTable("primitive", "ops", "ops/s", "p50 handoff", "p99 handoff", "p50 vs bare grant", "cmds/op", "scripts/op", "server µs/op")
	for _, r := range results {
		cmds, scripts, usec := "n/a", "n/a", "n/a"
		if r.callsKnown && r.ops > 0 {
			cmds = fmt.Sprintf("%.1f", float64(r.cmds)/float64(r.ops))
			scripts = fmt.Sprintf("%.1f", float64(r.scripts)/float64(r.ops))
			usec = fmt.Sprintf("%.1f", r.usec/float64(r.ops))
		}
		vs := "n/a"
		if floor > 0 && len(r.handoffs) > 0 {
			vs = fmt.Sprintf("%.2fx", float64(r.handoffs[min(len(r.handoffs)/2, len(r.handoffs)-1)])/float64(floor))
		}
		tab.add(r.kind, fmt.Sprint(r.ops), perSecond(r.ops, r.elapsed), quantile(r.handoffs, 0.50), quantile(r.handoffs, 0.99), vs, cmds, scripts, usec)
	}
	tab.write(out.stdout)
	if floor > 0 {
		fmt.Fprintf(out.stdout, "\nbare grant p50 %s: one script gives a key to a parked subscriber on this target (the floor of a handoff)\n", fmtDuration(floor))
	}
}

// quantile prints the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	return fmtDuration(sorted[min(int(q*float64(len(sorted))), len(sorted)-1)])
}
