package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cleanupTimeout bounds the deletion of a run's keys, also after ctrl-C.
const cleanupTimeout = 10 * time.Second

const demoAbout = `
Shows, in numbers, what a distributed lock is for. It simulates a service
running as several instances, each with its own Redis client, on an embedded
miniredis unless --redis or --cluster points it at a real deployment.
Scenarios (default: all):

  oversell  buyers read a stock counter, think, and write it back one lower.
            Without a lock, or with a sync.Mutex in each instance, they sell
            items that do not exist; with each redisync primitive they sell
            exactly the stock. Exits 1 if one does not.
  stampede  many requests find a cache entry missing at once and each loads
            it from a slow database. With a double-checked lock (check, lock,
            check again, load) exactly one loads. Exits 1 if a lock loads
            twice.
  batch     a batch of jobs runs on several instances, and a coordinator in
            each instance must go on only once every job is done: polling a
            counter, and waiting on a count-down latch. Exits 1 if a
            coordinator goes on early.
  transfer  transfers between two accounts in both directions at once: with
            no lock balances go wrong, with a lock per account taken payer
            first crossed transfers deadlock, with a multilock every transfer
            goes through. Exits 1 if the multilock does not.
  leader    the instances run a scheduler under leader election: one leads,
            its process dies, another takes over once its lease has run
            out, and an observer prints every change. Exits 1 if two
            instances ever run the schedule at once.

The demo keeps its keys under a random prefix of its own and deletes them at
the end, so it can run against a shared server.`

// demoFlags are the flags of the demo command.
type demoFlags struct {
	conn      *connFlags
	stock     int
	buyers    int
	instances int
	think     time.Duration
	requests  int
	transfers int
	load      time.Duration
	jobs      int
	work      time.Duration
	leader    *leaderConfig // set once connected
}

func runDemo(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "demo", "demo [flags] [oversell] [stampede] [batch] [transfer] [leader]", demoAbout)
	f := &demoFlags{conn: addConnFlags(fs, true)}
	fs.IntVar(&f.stock, "stock", 100, "oversell: items in stock")
	fs.IntVar(&f.buyers, "buyers", 400, "oversell: buyers, one purchase attempt each")
	fs.IntVar(&f.instances, "instances", 4, "simulated service instances, each with its own Redis client")
	fs.DurationVar(&f.think, "think", 2*time.Millisecond, "oversell, transfer: time between reading a value and writing it back")
	fs.IntVar(&f.requests, "requests", 200, "stampede: concurrent requests for the cold cache entry")
	fs.DurationVar(&f.load, "load", 50*time.Millisecond, "stampede: time one database load takes")
	fs.IntVar(&f.jobs, "jobs", 40, "batch: jobs in the batch")
	fs.DurationVar(&f.work, "work", 20*time.Millisecond, "batch: time a job takes, on average")
	fs.IntVar(&f.transfers, "transfers", 40, "transfer: concurrent transfers, half each way")
	scenarios, err := fs.parse(args)
	if err != nil {
		return err
	}
	if scenarios, err = f.check(scenarios); err != nil {
		return err
	}
	t, err := f.conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	prefix := runPrefix("demo")
	instances := t.clientsN(f.instances)
	fmt.Fprintf(out.stdout, "redisync demo on %s (keys under %q, deleted at the end)\n", t.desc, prefix)
	if t.embedded() {
		fmt.Fprintln(out.stdout, "(--redis URL or --cluster host:port,... runs it on a real deployment)")
	}
	f.leader = &leaderConfig{instances: f.instances, newClient: t.client, prefix: prefix}
	if t.embedded() {
		f.leader.advance = t.advance
	}
	err = f.runScenarios(ctx, out.stdout, scenarios, instances, prefix)
	return errors.Join(err, cleanupRun(ctx, instances[0], prefix))
}

// runScenarios runs the scenarios in order. A failed check does not stop
// the others; any other error does.
func (f *demoFlags) runScenarios(ctx context.Context, w io.Writer, scenarios []string, instances []redis.UniversalClient, prefix string) error {
	var failures []error
	for _, s := range scenarios {
		var err error
		switch s {
		case "oversell":
			err = demoOversell(ctx, w, &oversellConfig{stock: f.stock, buyers: f.buyers, think: f.think, instances: instances, prefix: prefix})
		case "stampede":
			err = demoStampede(ctx, w, &stampedeConfig{requests: f.requests, load: f.load, instances: instances, prefix: prefix})
		case "batch":
			err = demoBatch(ctx, w, &batchConfig{jobs: f.jobs, work: f.work, instances: instances, prefix: prefix})
		case "transfer":
			err = demoTransfer(ctx, w, &transferConfig{transfers: f.transfers, think: f.think, instances: instances, prefix: prefix})
		case "leader":
			err = demoLeader(ctx, w, f.leader)
		}
		if err != nil && !errors.Is(err, errCheckFailed) {
			return err
		}
		failures = append(failures, err)
	}
	return errors.Join(failures...)
}

// demoScenarios are the scenarios, in the order they run by default.
var demoScenarios = []string{"oversell", "stampede", "batch", "transfer", "leader"}

// check checks the flags and scenarios, and returns the scenarios to run.
func (f *demoFlags) check(scenarios []string) ([]string, error) {
	for _, s := range scenarios {
		if !slices.Contains(demoScenarios, s) {
			return nil, usagef("unknown scenario %q (want one of %s)", s, strings.Join(demoScenarios, ", "))
		}
	}
	if len(scenarios) == 0 {
		scenarios = demoScenarios
	}
	switch {
	case f.stock < 1:
		return nil, usagef("--stock %d: want at least 1", f.stock)
	case f.buyers < 1:
		return nil, usagef("--buyers %d: want at least 1", f.buyers)
	case f.instances < 1 || f.instances > 64:
		return nil, usagef("--instances %d: want 1 to 64", f.instances)
	case f.requests < 1:
		return nil, usagef("--requests %d: want at least 1", f.requests)
	case f.jobs < 1:
		return nil, usagef("--jobs %d: want at least 1", f.jobs)
	case f.transfers < 1:
		return nil, usagef("--transfers %d: want at least 1", f.transfers)
	case f.think < 0 || f.load < 0 || f.work < 0:
		return nil, usagef("--think, --load and --work must not be negative")
	}
	return scenarios, nil
}

// errCheckFailed reports that a distributed variant did not do its job.
var errCheckFailed = errors.New("check failed")

func demoOversell(ctx context.Context, w io.Writer, cfg *oversellConfig) error {
	fmt.Fprintf(w, "\n== oversell ==\n%d items in stock, %d buyers on %d service instances, each instance with its own\n"+
		"Redis client. A buyer reads the stock, thinks for %v, and writes back stock-1.\n\n",
		cfg.stock, cfg.buyers, len(cfg.instances), cfg.think)
	tab := newTable("variant", "sold", "oversold", "wall time", "purchases/s")
	var rows []oversellRow
	for i, v := range oversellVariants() {
		row, err := runOversell(ctx, cfg, v, i)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		tab.add(row.variant, fmt.Sprint(row.sold), fmt.Sprint(row.oversold(cfg.stock)), fmtDuration(row.wall), perSecond(int64(row.sold), row.wall))
	}
	tab.write(w)
	fmt.Fprintln(w)
	want := min(cfg.stock, cfg.buyers)
	var failed []string
	for _, r := range rows {
		switch {
		case r.distributed && r.sold != want:
			failed = append(failed, fmt.Sprintf("%s sold %d, want exactly %d", r.variant, r.sold, want))
		case !r.distributed && r.oversold(cfg.stock) > 0:
			fmt.Fprintf(w, "- %s: %s\n", r.variant, oversellReason(r, len(cfg.instances)))
		case !r.distributed:
			fmt.Fprintf(w, "- %s: did not oversell this time (the race needs buyers that overlap: try a longer --think)\n", r.variant)
		}
	}
	if err := failures(w, "oversell", failed); err != nil {
		return err
	}
	fmt.Fprintf(w, "- every distributed variant sold exactly %d, oversold 0: checked\n", want)
	return nil
}

func oversellReason(r oversellRow, instances int) string {
	if strings.HasPrefix(r.variant, "local") {
		return fmt.Sprintf("a sync.Mutex excludes only the buyers of its own instance; the %d instances still race", instances)
	}
	return "buyers read the same stock before anyone wrote it back, and each sold an item"
}

func demoStampede(ctx context.Context, w io.Writer, cfg *stampedeConfig) error {
	fmt.Fprintf(w, "\n== stampede ==\n%d concurrent requests for a cold cache entry (the shop's category tree) on %d\n"+
		"instances; on a miss a request loads it from the database, which takes %v.\n\n",
		cfg.requests, len(cfg.instances), cfg.load)
	tab := newTable("variant", "requests", "db loads", "wall time")
	var rows []stampedeRow
	for i, v := range stampedeVariants() {
		row, err := runStampede(ctx, cfg, v, i)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		tab.add(row.variant, fmt.Sprint(cfg.requests), fmt.Sprint(row.loads), fmtDuration(row.wall))
	}
	tab.write(w)
	fmt.Fprintln(w)
	var failed []string
	for _, r := range rows {
		switch {
		case r.locked && r.loads != 1:
			failed = append(failed, fmt.Sprintf("%s loaded %d times, want once", r.variant, r.loads))
		case !r.locked:
			fmt.Fprintf(w, "- %s: %d of %d requests missed the cache at once and each went to the database\n", r.variant, r.loads, cfg.requests)
		}
	}
	if err := failures(w, "stampede", failed); err != nil {
		return err
	}
	if slices.ContainsFunc(rows, func(r stampedeRow) bool { return r.locked }) {
		fmt.Fprintln(w, "- with the lock one request loaded; the others checked the cache again once they held it, and found it")
	}
	return nil
}

// failures prints the failed checks of a scenario and returns them as one
// error (nil when none failed).
func failures(w io.Writer, scenario string, failed []string) error {
	if len(failed) == 0 {
		return nil
	}
	for _, msg := range failed {
		fmt.Fprintf(w, "FAIL: %s\n", msg)
	}
	return fmt.Errorf("%w: %s: %s", errCheckFailed, scenario, strings.Join(failed, "; "))
}
