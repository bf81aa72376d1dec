// Command bench compares redisync with other Go lock libraries on a
// redis-server it starts itself on a loopback port, and prints the results
// as Markdown tables:
//
//	cd bench && go run .
//
// With -page it also writes the results as a Markdown page that says when,
// where and how they were measured (the repository's docs/benchmarks.md):
//
//	cd bench && go run . -page ../docs/benchmarks.md
//
// Scenarios for every library: uncontended Lock+Unlock, handoff to a parked
// waiter, 16 workers with a 1 ms critical section, pure contention, many
// locks (10,000 names locked by 64 goroutines, uncontended).
// redisync only: watchdog load of many held locks, many parked waiters,
// fairlock, rwlock (and its parked waiters), semaphore, latch, and the
// wake-up transport on a three-master cluster it starts (with redis-cli
// --cluster create) against standalone.
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// config holds the flags.
type config struct {
	run            string
	verbose        bool
	uncontended    time.Duration
	many           time.Duration
	handoff        time.Duration
	handoffN       int
	window         time.Duration
	warmup         time.Duration
	holds          int
	wdTimeout      time.Duration
	periods        int
	waiters        int
	waitLocks      int
	clusterN       []int
	clusterTimeout time.Duration
	clusterRuns    int
	latchWaiters   int
	latchRounds    int
	featureRuns    int
	libs           string   // -libs: the contenders to run
	page           string   // -page: write the Markdown page here
	section        string   // -section: write the opt-in scenarios' tables into this page's section
	note           string   // -note: a remark printed on the page
	proxy          bool     // -proxy: every library through twemproxy
	args           []string // the command-line arguments, for the page
}

func (c *config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.run, "run", "", "run only the scenarios whose name matches this regexp")
	fs.StringVar(&c.libs, "libs", "", "run only the libraries whose name matches this regexp")
	fs.BoolVar(&c.verbose, "v", false, "print the Redis commands of each measurement, by name")
	fs.DurationVar(&c.uncontended, "uncontended", 3*time.Second, "uncontended: time per library")
	fs.DurationVar(&c.many, "many", 3*time.Second, "many-locks: measured time per library")
	fs.DurationVar(&c.handoff, "handoff", 5*time.Second, "handoff: time budget per library")
	fs.IntVar(&c.handoffN, "handoff-n", 300, "handoff: at most this many handoffs per library")
	fs.DurationVar(&c.window, "d", 5*time.Second, "loop scenarios (workers, contention, rwlock, semaphore): measured time per library")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "loop scenarios: unmeasured time before the window")
	fs.IntVar(&c.holds, "holds", 10000, "watchdog: held locks")
	fs.DurationVar(&c.wdTimeout, "watchdog-timeout", 3*time.Second, "watchdog: lease; renewed every third of it")
	fs.IntVar(&c.periods, "periods", 4, "watchdog: renewal periods measured")
	fs.IntVar(&c.waiters, "waiters", 10000, "waiters: parked goroutines")
	fs.IntVar(&c.waitLocks, "waiter-locks", 1000, "waiters: locks they wait on")
	c.clusterN = []int{100, 1000, 3000}
	fs.Func("cluster-n", "cluster: comma-separated numbers of waiters, each on a lock of its own (default 100,1000,3000)", func(s string) error {
		n, err := parseSizes(s)
		c.clusterN = n
		return err
	})
	fs.IntVar(&c.clusterRuns, "cluster-runs", 3, "cluster: runs per row; the table shows the median of each measure")
	fs.DurationVar(&c.clusterTimeout, "cluster-timeout", 10*time.Minute, "cluster: bound on the whole scenario")
	fs.IntVar(&c.latchWaiters, "latch-waiters", 1000, "latch: waiters woken by the last CountDown")
	fs.IntVar(&c.latchRounds, "latch-rounds", 5, "latch: rounds measured")
	fs.IntVar(&c.featureRuns, "feature-runs", featureRuns, "features: runs of every variant; the table shows their median and range")
	fs.StringVar(&c.section, "section", "", "write the tables of the opt-in scenarios (features) into the \"Server features\" section of this `file` (e.g. ../docs/benchmarks.md), replacing this server's part")
	fs.StringVar(&c.page, "page", "", "also write the results as a Markdown page to this `file` (e.g. ../docs/benchmarks.md), with the machine, server, commit, date and command")
	fs.StringVar(&c.note, "note", "", "a remark about the circumstances of the run, printed on the page")
	fs.BoolVar(&c.proxy, "proxy", false, "run every library through twemproxy (nutcracker, which must be installed) in front of the server: pub/sub is refused, so redisync's waiters poll; libraries on clients of their own (rueidislock) cannot pass it")
}

// scenario is one named benchmark producing one table.
type scenario struct {
	name string
	run  func(ctx context.Context, e *env) (*table, error)
}

// optIn names the scenarios that run only when -run names them: they
// measure the server more than the libraries, and write to a section of
// the page of their own (-section).
var optIn = map[string]bool{"features": true}

// scenarios run in this order; the pending files append theirs.
var scenarios = []scenario{
	{"uncontended", uncontended},
	{"handoff", handoff},
	{"workers", workers},
	{"workers-busy", workersBusy},
	{"contention", contention},
	{"watchdog", watchdogLoad},
	{"waiters", waiters},
}

// env is what a scenario runs in.
type env struct {
	cfg  config
	addr string // where the libraries' clients connect: the server, or the proxy (-proxy)
	// direct is the server's own address: the bare grant needs pub/sub,
	// which a proxy refuses.
	direct string
	ctl    *redis.Client // observes the server; its commands are not counted
	out    io.Writer

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
	opt := &redis.Options{Addr: addr, PoolTimeout: time.Minute}
	if e.cfg.proxy && addr == e.addr {
		// twemproxy closes the connection on go-redis's HELLO and
		// CLIENT SETINFO: answer the one, skip the other.
		opt.Protocol, opt.DisableIdentity, opt.Dialer = 2, true, redistest.HelloAnswering(nil)
	}
	rdb := redis.NewClient(opt)
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

// closeContenders releases what the contenders' handles share, such as
// clients of their own, with the go-redis clients at the end of a scenario.
func closeContenders() {
	for _, c := range contenders {
		if c.close != nil {
			c.close()
		}
	}
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
	cfg.args = os.Args[1:]
	if err := pickContenders(cfg.libs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// SIGTERM too (kill's default), sent to this process: the run then
	// stops its server. (Under go run, kill the bench process itself or
	// its process group: go run does not pass SIGTERM on.)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	e := &env{cfg: cfg, addr: srv.addr, direct: srv.addr, out: out, results: make(map[string]float64)}
	if cfg.proxy {
		proxied = true
		nc, err := redistest.LaunchNutcracker(srv.addr)
		if err != nil {
			return fmt.Errorf("-proxy: %w", err)
		}
		defer nc.Close()
		e.addr = nc.Addr()
	}
	e.ctl = redis.NewClient(&redis.Options{Addr: srv.addr})
	defer e.ctl.Close()
	m, err := header(ctx, e)
	if err != nil {
		return err
	}
	var tables, own []*table
	for _, s := range scenarios {
		if !match.MatchString(s.name) || optIn[s.name] && cfg.run == "" {
			continue
		}
		start := time.Now()
		t, err := s.run(ctx, e)
		e.closeClients()
		closeContenders()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		t.note("(%s: %.1f s)", s.name, time.Since(start).Seconds())
		t.print(out)
		tables = append(tables, t)
		if optIn[s.name] {
			own = append(own, t)
		}
		// Start every scenario from an empty server.
		if err := e.ctl.FlushAll(ctx).Err(); err != nil {
			return err
		}
	}
	if cfg.section != "" && len(own) > 0 {
		commit := repoCommit(ctx, ".", cfg.section)
		if err := writeSection(cfg.section, m.server, commit, time.Now(), own); err != nil {
			return fmt.Errorf("-section: %w", err)
		}
		fmt.Fprintf(out, "\nwrote %s (%s, %s)\n", cfg.section, sectionHead, m.server)
	}
	if t := targets(e); len(t.rows) > 0 {
		t.print(out)
	}
	if cfg.page == "" {
		return nil
	}
	p := pageData{
		when: time.Now(), commit: repoCommit(ctx, ".", cfg.page), command: commandLine(cfg.args),
		note: cfg.note, machine: m, summary: summary(e), tables: tables,
	}
	if err := writePage(cfg.page, p); err != nil {
		return fmt.Errorf("-page: %w", err)
	}
	fmt.Fprintf(out, "\nwrote %s\n", cfg.page)
	return nil
}

// header prints what the numbers were measured on, and returns it.
func header(ctx context.Context, e *env) (machine, error) {
	info, err := e.ctl.Info(ctx, "server").Result()
	if err != nil {
		return machine{}, err
	}
	m := newMachine(ctx, e, serverVersion(info))
	fmt.Fprintf(e.out, "## redisync benchmarks\n\n")
	fmt.Fprintf(e.out, "- machine: %s\n", m.describe())
	fmt.Fprintf(e.out, "- %s; %s on loopback %s, persistence off; median PING round trip %s\n",
		m.goVersion, m.server, m.addr, dur(m.rtt))
	fmt.Fprintf(e.out, "- command: %s\n", commandLine(e.cfg.args))
	if e.cfg.proxy {
		fmt.Fprintf(e.out, "- every library through twemproxy (nutcracker) at %s; the bare grant on the server itself\n", e.addr)
	}
	return m, nil
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
