// Command bench compares redisync with other Go lock libraries on a
// redis-server it starts itself on a loopback port, and prints the results
// as Markdown tables:
//
//	cd bench && go run .
//
// Scenarios for every library: uncontended Lock+Unlock, handoff to a parked
// waiter, 16 workers with a 1 ms critical section, pure contention.
// redisync only: watchdog load of many held locks, many parked waiters,
// fairlock, rwlock and semaphore.
// Flags bound the run; see -help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// config holds the flags.
type config struct {
	run         string
	verbose     bool
	uncontended time.Duration
	handoff     time.Duration
	handoffN    int
	window      time.Duration
	warmup      time.Duration
	holds       int
	wdTimeout   time.Duration
	periods     int
	waiters     int
	waitLocks   int
}

func (c *config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.run, "run", "", "run only the scenarios whose name matches this regexp")
	fs.BoolVar(&c.verbose, "v", false, "print the Redis commands of each measurement, by name")
	fs.DurationVar(&c.uncontended, "uncontended", 3*time.Second, "uncontended: time per library")
	fs.DurationVar(&c.handoff, "handoff", 5*time.Second, "handoff: time budget per library")
	fs.IntVar(&c.handoffN, "handoff-n", 300, "handoff: at most this many handoffs per library")
	fs.DurationVar(&c.window, "d", 5*time.Second, "loop scenarios (workers, contention, rwlock, semaphore): measured time per library")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "loop scenarios: unmeasured time before the window")
	fs.IntVar(&c.holds, "holds", 10000, "watchdog: held locks")
	fs.DurationVar(&c.wdTimeout, "watchdog-timeout", 3*time.Second, "watchdog: lease; renewed every third of it")
	fs.IntVar(&c.periods, "periods", 4, "watchdog: renewal periods measured")
	fs.IntVar(&c.waiters, "waiters", 10000, "waiters: parked goroutines")
	fs.IntVar(&c.waitLocks, "waiter-locks", 1000, "waiters: locks they wait on")
}

// scenario is one named benchmark producing one table.
type scenario struct {
	name string
	run  func(ctx context.Context, e *env) (*table, error)
}

// scenarios run in this order; the pending files append theirs.
var scenarios = []scenario{
	{"uncontended", uncontended},
	{"handoff", handoff},
	{"workers", workers},
	{"contention", contention},
	{"watchdog", watchdogLoad},
	{"waiters", waiters},
}

// env is what a scenario runs in.
type env struct {
	cfg  config
	addr string
	ctl  *redis.Client // observes the server; its commands are not counted
	out  io.Writer

	mu      sync.Mutex
	clients []*redis.Client // closed at the end of each scenario
	results map[string]float64
}

// client returns a new client of the server with a counting hook. The
// pool timeout is generous: some scenarios queue thousands of goroutines
// on one pool.
func (e *env) client() (*redis.Client, *counter) { return e.clientAt(e.addr) }

// clientAt is client for the server at addr (a scenario may start more).
func (e *env) clientAt(addr string) (*redis.Client, *counter) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolTimeout: time.Minute})
	c := &counter{}
	rdb.AddHook(c)
	e.mu.Lock()
	e.clients = append(e.clients, rdb)
	e.mu.Unlock()
	return rdb, c
}

func (e *env) closeClients() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clients {
		_ = c.Close()
	}
	e.clients = nil
}

// set records a result for the targets table.
func (e *env) set(scenario, lib, metric string, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.results[scenario+"/"+lib+"/"+metric] = v
}

func (e *env) get(scenario, lib, metric string) (float64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.results[scenario+"/"+lib+"/"+metric]
	return v, ok
}

func main() {
	var cfg config
	cfg.flags(flag.CommandLine)
	flag.Usage = usage
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, cfg, os.Stdout)
	stop()
	if errors.Is(err, errNoServer) && os.Getenv("REDISYNC_REQUIRE_REDIS") != "1" {
		fmt.Fprintln(os.Stderr, "bench: skipped:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	fmt.Fprintf(flag.CommandLine.Output(), "usage: go run . [flags]\n\nscenarios: %s\n\nflags:\n",
		strings.Join(names, ", "))
	flag.PrintDefaults()
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	match, err := regexp.Compile(cfg.run)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	srv, err := startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.stop()
	e := &env{cfg: cfg, addr: srv.addr, out: out, results: make(map[string]float64)}
	e.ctl = redis.NewClient(&redis.Options{Addr: srv.addr})
	defer e.ctl.Close()
	if err := header(ctx, e); err != nil {
		return err
	}
	for _, s := range scenarios {
		if !match.MatchString(s.name) {
			continue
		}
		start := time.Now()
		t, err := s.run(ctx, e)
		e.closeClients()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		t.note("(%s: %.1f s)", s.name, time.Since(start).Seconds())
		t.print(out)
		// Start every scenario from an empty server.
		if err := e.ctl.FlushAll(ctx).Err(); err != nil {
			return err
		}
	}
	if t := targets(e); len(t.rows) > 0 {
		t.print(out)
	}
	return nil
}

// header prints what the numbers were measured on.
func header(ctx context.Context, e *env) error {
	info, err := e.ctl.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	version := serverVersion(info)
	fmt.Fprintf(e.out, "## redisync benchmarks\n\n")
	fmt.Fprintf(e.out, "- machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(e.out, "- %s; %s on loopback %s, persistence off; median PING round trip %s\n",
		runtime.Version(), version, e.addr, dur(pingRTT(ctx, e.ctl)))
	fmt.Fprintf(e.out, "- command: go run . %s\n", strings.Join(os.Args[1:], " "))
	return nil
}

// pingRTT is the median of 200 PINGs on rdb.
func pingRTT(ctx context.Context, rdb *redis.Client) time.Duration {
	ds := make([]time.Duration, 0, 200)
	for range cap(ds) {
		start := time.Now()
		if rdb.Ping(ctx).Err() != nil {
			return 0
		}
		ds = append(ds, time.Since(start))
	}
	return summarize(ds).p50
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
