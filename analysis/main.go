// Command analysis is a Jepsen-style analysis of redisync's locks under real
// faults: it starts redis-server processes, a fenced resource and client
// processes in network namespaces of their own, runs a lock-protected
// read-modify-write workload on each primitive while a nemesis pauses, cuts
// off and kills the holder and restarts, pauses and moves the clock of
// Redis, one fault kind at a time and all of them mixed, then checks the
// histories:
// overlapping holds as the clients saw them (lock violations) against
// stale writes accepted by the resource (data violations). It needs root
// (namespaces, veth pairs), ip and redis-server (which also runs the
// Sentinel where redis-sentinel is not installed; gcc for the clock
// fault's shim), and writes the page
// docs/analysis.md:
//
//	cd analysis && go run . -injections 5 -leases 1s,30s -page ../docs/analysis.md
//
// about 50 minutes on a 2-core machine (-plan prints the plan and its
// time without running it): every primitive under every fault kind that
// applies to it with a 1s lease, at least 5 faults each (-injections
// trades time: about 6 minutes a fault), then every primitive with the
// library's default 30s lease under a pause, a partition and a crash,
// one each (-lease-faults trades time: about 4 to 6 minutes a kind).
//
// The same binary runs the clients (`analysis client ...`) and the fenced
// resource (`analysis resource ...`); the harness starts them itself.
// Everything it creates (namespaces, links, processes) is removed on exit
// and on interrupt; -cleanup removes what a killed run left behind.
//
// Every run ends with a verdict (verdict.go) and exits 1 when it fails: a
// fenced primitive's resource accepted a stale write, or a fault kind that
// must cause no overlap (a crash, a partition the holder notices in time,
// a pause of redis-server, a restart with persistence) caused overlapping
// holds, in a mixed run the fault under way when they began. Overlaps under
// pauses, clock jumps and restarts without data are reported, not judged.
// The CI smoke run, in .ci/run, is
//
//	cd analysis && go run . -smoke
//
// about 40s: each primitive under one fault kind, each kind once, paired
// so that every pair can fail (smokePairs says which and why).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config holds the harness's flags.
type config struct {
	total   time.Duration
	page    string
	clients int
	lease   time.Duration // the first of -leases: every segment's, but those of extraLeases
	// extraLeases are the further leases of -leases: each primitive under
	// each kind of leaseFaults, one fault each.
	extraLeases []time.Duration
	leaseFaults []string
	injections  int // faults asked of each segment of the first lease
	work        time.Duration
	permits     int
	prims       []string
	faults      []string
	keep        bool
	cleanup     bool
	smoke       bool
	showPlan    bool        // -plan: print the plan and its time, and exit
	pairs       [][2]string // the segments, primitive and fault: see segments
	netSlot     int         // see useNetSlot
	seed        uint64      // the mixed fault's draws
	args        []string    // the command line, for the page
}

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "client" {
		err = runClient(os.Args[2:])
	} else if len(os.Args) > 1 && os.Args[1] == "resource" {
		err = runResource(os.Args[2:])
	} else {
		err = harness(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "analysis:", err)
		os.Exit(1)
	}
}

func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("analysis", flag.ContinueOnError)
	c := config{args: args}
	var prims, faults, leases, leaseFaults string
	fs.DurationVar(&c.total, "time", 2*time.Minute, "length of the whole run, shared by every primitive and fault")
	fs.StringVar(&c.page, "page", "", "write the Markdown page here (e.g. ../docs/analysis.md)")
	fs.IntVar(&c.clients, "clients", 4, "client processes, each in a network namespace of its own")
	fs.DurationVar(&c.lease, "lease", time.Second, "watchdog timeout (lease) of every hold")
	fs.StringVar(&leases, "leases", "", "leases to run, e.g. 1s,30s: the first as -lease, each further one for "+
		"every primitive under each kind of -lease-faults, one fault each")
	fs.StringVar(&leaseFaults, "lease-faults", "pause,partition,kill", "fault kinds of the segments of the further leases of -leases")
	fs.IntVar(&c.injections, "injections", 1, "plan every segment of the first lease for at least this many faults "+
		"(the run takes longer than -time when it must); the verdict fails a segment that got fewer")
	fs.DurationVar(&c.work, "work", 20*time.Millisecond, "average length of a critical section")
	fs.IntVar(&c.permits, "permits", 2, "permits of the leased semaphore")
	fs.StringVar(&prims, "primitives", strings.Join(primitives, ","), "primitives to run")
	fs.StringVar(&faults, "faults", strings.Join(faultKinds, ","), "fault kinds to run")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the mixed fault's draws (0: a random one, printed)")
	fs.BoolVar(&c.keep, "keep", false, "keep the run's directory (histories, logs)")
	fs.IntVar(&c.netSlot, "netslot", 0, "move the run's namespaces, links and addresses to slot 1-9, beside a run in slot 0 (the default)")
	fs.BoolVar(&c.cleanup, "cleanup", false, "remove the namespaces and links an interrupted run left behind, and exit")
	fs.BoolVar(&c.showPlan, "plan", false, "print the segments the run would make and their planned time, and exit (needs no root)")
	fs.BoolVar(&c.smoke, "smoke", false, "the CI smoke run: each primitive under one fault kind (smokePairs), -time 40s unless given")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.prims, c.faults = strings.Split(prims, ","), strings.Split(faults, ",")
	if err := c.leaseConfig(fs, leases, leaseFaults); err != nil {
		return c, err
	}
	if c.smoke {
		if err := c.smokeConfig(fs); err != nil {
			return c, err
		}
	}
	for _, p := range c.prims {
		if !slices.Contains(primitives, p) {
			return c, fmt.Errorf("unknown primitive %q (want some of %s)", p, strings.Join(primitives, ","))
		}
	}
	for _, f := range c.faults {
		if !slices.Contains(faultKinds, f) {
			return c, fmt.Errorf("unknown fault %q (want some of %s)", f, strings.Join(faultKinds, ","))
		}
	}
	if c.netSlot < 0 || c.netSlot > 9 {
		return c, errors.New("-netslot: want 0 to 9")
	}
	useNetSlot(c.netSlot)
	if c.seed == 0 {
		c.seed = rand.Uint64() | 1 // never 0, which asks for one
	}
	c.args = withoutFlag(args, "netslot") // it moves names, not results: the page's command leaves it out
	if c.clients < 2 || c.clients > 9 {
		return c, errors.New("-clients: want 2 to 9")
	}
	return c, nil
}

// allFaults is every fault kind the run may inject, those of the further
// leases included.
func (c config) allFaults() []string {
	if len(c.extraLeases) == 0 {
		return c.faults
	}
	return append(slices.Clone(c.faults), c.leaseFaults...)
}

// leaseConfig reads -leases and -lease-faults.
func (c *config) leaseConfig(fs *flag.FlagSet, leases, leaseFaults string) error {
	if c.injections < 1 {
		return errors.New("-injections: want 1 or more")
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "lease" })
	if leases != "" {
		if given {
			return errors.New("-lease and -leases: give one of them (the first of -leases is the lease)")
		}
		for i, l := range strings.Split(leases, ",") {
			d, err := time.ParseDuration(l)
			if err != nil || d < 100*time.Millisecond {
				return fmt.Errorf("-leases: %q is not a lease (want durations of 100ms or more, e.g. 1s,30s)", l)
			}
			if i == 0 {
				c.lease = d
			} else if d != c.lease && !slices.Contains(c.extraLeases, d) {
				c.extraLeases = append(c.extraLeases, d)
			}
		}
	}
	c.leaseFaults = strings.Split(leaseFaults, ",")
	for _, f := range c.leaseFaults {
		if !slices.Contains(faultKinds, f) {
			return fmt.Errorf("-lease-faults: unknown fault %q (want some of %s)", f, strings.Join(faultKinds, ","))
		}
	}
	return nil
}

// checkHost refuses to run without what the harness needs: root, ip
// (iproute2) and redis-server, which also runs the Sentinel of the
// failover fault where redis-sentinel is not installed (sentinelArgv),
// and gcc only when the clock fault may run (its shim is built at start).
func checkHost(euid int, faults []string) error {
	if euid != 0 {
		return errors.New("must run as root: the harness creates network namespaces and veth pairs " +
			"(run it with sudo, or as root in a VM or container)")
	}
	need := map[string]string{"ip": "iproute2", "redis-server": "redis-server"}
	if slices.Contains(faults, "clock") || slices.Contains(faults, "mixed") {
		need["gcc"] = "gcc (or leave the clock and mixed faults out with -faults)"
	}
	var missing, install []string
	for _, tool := range []string{"ip", "redis-server", "gcc"} {
		if pkg, ok := need[tool]; ok {
			if _, err := exec.LookPath(tool); err != nil {
				missing, install = append(missing, tool), append(install, pkg)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found on PATH: install %s (Debian: apt-get install iproute2 redis-server gcc)",
			strings.Join(missing, ", "), strings.Join(install, ", "))
	}
	return nil
}

func harness(args []string) error {
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	if cfg.showPlan {
		r := &run{cfg: cfg}
		for _, p := range r.plan() {
			fmt.Printf("%-40s %d faults, %v\n", p.label(), p.want, p.dur.Round(100*time.Millisecond))
		}
		fmt.Println(r.planSummary())
		return nil
	}
	if err := checkHost(os.Geteuid(), cfg.allFaults()); err != nil {
		return err
	}
	if cfg.cleanup {
		removeLeftovers()
		return nil
	}
	if left := leftovers(); len(left) > 0 {
		return fmt.Errorf("another run is going on or left %s behind: stop it, or remove them with -cleanup",
			strings.Join(left, ", "))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r, err := newRun(cfg)
	if err != nil {
		return err
	}
	defer r.close()
	results, err := r.all(ctx)
	if err != nil {
		return err
	}
	fmt.Print(resultTable(results))
	if cfg.page != "" {
		if err := os.WriteFile(cfg.page, []byte(r.page(results)), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", cfg.page)
	}
	text, ok := verdictText(results)
	fmt.Print(text)
	if !ok {
		return errors.New("the verdict failed: see the FAIL lines above")
	}
	return nil
}

// withoutFlag is args without the flag name and its value.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case a == name && i+1 < len(args):
			i++
		case strings.HasPrefix(a, name+"="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}
