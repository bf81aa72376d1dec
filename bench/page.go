package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// machine is what a run was measured on, for the header and the page.
type machine struct {
	cpu        string
	cpus       int // runtime.NumCPU: the CPUs this process may use (nproc)
	gomaxprocs int
	goos       string
	goarch     string
	goVersion  string
	server     string // "redis-server 7.0.15"
	addr       string
	rtt        time.Duration // median PING round trip
}

func (m machine) describe() string {
	return fmt.Sprintf("%s, %d CPUs (nproc %d, GOMAXPROCS %d), %s/%s",
		m.cpu, m.cpus, m.cpus, m.gomaxprocs, m.goos, m.goarch)
}

// pageData is everything the generated page says besides the tables.
type pageData struct {
	when    time.Time
	commit  string // git rev-parse HEAD, "+ uncommitted changes" when dirty
	command string // the exact command line that produced the page
	note    string // -note: a remark about the circumstances of the run
	machine machine
	summary *table
	tables  []*table
}

// repoCommit names the commit the benchmark ran on, from the repository
// that holds dir. Changes to files other than the page itself mark it as
// not committed, since then the numbers do not belong to that commit.
func repoCommit(ctx context.Context, dir, page string) string {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil {
		return "unknown (not a git checkout)"
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return rev
	}
	pageAbs, _ := filepath.Abs(page)
	top, _ := git("rev-parse", "--show-toplevel")
	for line := range strings.Lines(status) {
		path := strings.TrimSpace(line)
		if len(path) > 3 {
			path = strings.TrimSpace(path[2:])
		}
		if filepath.Join(top, path) != pageAbs {
			return rev + " (with uncommitted changes)"
		}
	}
	return rev
}

// commandLine is the command that reproduces this run from the
// repository's root.
func commandLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$|&;()<>*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.TrimSpace("cd bench && go run . " + strings.Join(quoted, " "))
}

// writePage writes the benchmark page to path, through a temporary file
// so that a failed run never leaves half a page.
func writePage(path string, p pageData) error {
	var b bytes.Buffer
	p.render(&b)
	// The opt-in scenarios' section (-section) is not this run's: keep it.
	if old, err := os.ReadFile(path); err == nil {
		if section := sectionOf(string(old)); section != "" {
			b.WriteString("\n" + section)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (p pageData) render(b *bytes.Buffer) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("<!-- Written by the bench module (the command is under \"This run\"). Do not edit by hand: run it again. -->\n\n")
	w("# Benchmarks\n\n")
	w("redisync next to the Go Redis lock libraries in common use, on one Redis\n")
	w("server, in one run, the libraries taking turns so that the machine's\n")
	w("other load falls on all of them alike. The whole page, numbers and all,\n")
	w("is written by the command below; rerun it to check the numbers on your\n")
	w("own hardware.\n\n")
	w("## This run\n\n")
	w("| | |\n|---|---|\n")
	w("| date | %s |\n", p.when.UTC().Format("2006-01-02 15:04 UTC"))
	w("| commit | `%s` |\n", p.commit)
	w("| command | `%s` |\n", p.command)
	w("| machine | %s |\n", p.machine.describe())
	w("| Go | %s |\n", p.machine.goVersion)
	w("| server | %s on loopback, persistence off, started by the command |\n", p.machine.server)
	w("| PING round trip | %s (median of 200) |\n", dur(p.machine.rtt))
	if p.note != "" {
		w("\n%s\n", p.note)
	}
	if p.summary != nil && len(p.summary.rows) > 0 {
		p.summary.print(b)
	}
	w("\n%s", pageMethod)
	w("\n## Results\n")
	for _, t := range p.tables {
		t.print(b)
	}
}

// pageMethod describes the contenders and the scenarios. It names the
// versions pinned in bench/go.mod.
const pageMethod = `## Contenders

Every library runs on go-redis v9 against the same server, except
rueidislock, which runs on a rueidis client of its own, one per go-redis
client of the scenario.

- **redisync rlock**: default options (the watchdog keeps a 30 s lease alive).
- **redsync** (` + "`github.com/go-redsync/redsync/v4`" + ` v4.18.1): default options
  but unlimited tries, so that it keeps waiting; between tries it sleeps a
  random 50-250 ms, its default.
- **redislock** (` + "`github.com/bsm/redislock`" + ` v0.9.4): a 10 s TTL, retrying with
  a linear backoff of 10 ms ("redislock 10ms") or 1 ms ("redislock 1ms").
- **rueidislock** (` + "`github.com/redis/rueidis/rueidislock`" + ` v1.0.79): configured
  for one server as its docs say (` + "`KeyMajority: 1`" + `, NOLOOP tracking); its
  default 5 s key validity, extended every 2.5 s. A waiter waits for the
  client-side caching invalidation of the key. Its round trips are not
  counted ("-").
- **bare SET NX**: ` + "`SET key token NX PX`" + ` and a compare-and-delete script,
  the least any Redis lock costs. It cannot wait, so it runs only in the
  uncontended scenario, next to **rlock scripts alone**: redisync's two
  scripts called directly from go-redis, which shows how much of redisync's
  cost is Redis running its scripts and how much is the library's Go code.
- **redisync rlock fenced**: rlock with ` + "`WithFencing`" + `, every first
  acquisition taking a fencing token; uncontended scenarios only, for what
  a token adds to the pair.
- **Redisson algorithm**: not a library but a reference, written for
  this page from the published algorithm of Redisson's reentrant lock
  (not from its code), in two scripts: the lock is a hash whose field, a
  random owner id per handle, counts that owner's holds. The acquire, when
  the hash is absent or holds the caller's field, adds one to the field
  and sets a 30 s lease (PEXPIRE), else returns the lease left (PTTL); the
  release returns nil when the caller's field is absent, else takes one
  from it and renews the lease while it is above 0, or deletes the hash
  and publishes on a channel named after the key. It has no waiting
  protocol, so it runs only in the uncontended scenarios, as the
  reference for rlock's server time.
- **rlock's checks alone**: not a library but a reference, written for
  this page: the least two scripts cost that make the checks rlock's
  uncontended pair makes. The acquire refuses a copy run after its
  deadline on the server's clock (TIME), finds the name free with one
  EXISTS of the lock and the keys other kinds keep under the name, and
  takes it with HSET and PEXPIRE; the release checks the hold id's field,
  pops the waiter list (where a grant would start) and deletes the hash.
  No fencing, waiting or watchers. Uncontended scenarios only: what it
  costs the server is a floor for rlock's.
- **bare FIFO lock**: not a library but a reference, written for this
  page: a minimal strictly fair lock through Redis. A script takes the
  free key or puts the caller at the end of a list; the release makes
  the list's first the holder and publishes to it, and the waiter's
  process, parked on one subscription per client, goes on when the
  message arrives. Every handoff is one script and one message, and the
  line alone decides who is next. It has no watchdog, nothing for
  crashed waiters, and nothing for a lost message but a check every
  second. Its rows show what a fair lock this simple reaches in the same
  run, next to redisync fairlock.

## Scenarios

1. **Uncontended**: one handle locks and unlocks a lock nobody else wants,
   the libraries taking turns in bursts of 32.
2. **Handoff**: a holder on one client unlocks while a waiter on another
   client has been parked for 20-30 ms; timed from the ` + "`Unlock`" + ` call to the
   moment the waiter holds the lock.
3. **Workers**: 16 workers over 4 clients share one lock; each thinks for
   0-4 ms outside it, then holds it for 1 ms (a sleep). 3b runs the
   same workers with a critical section that spins on the CPU for 1 ms:
   a sleep of 1 ms overshoots by up to a millisecond whenever the
   process wakes for something else during it (Go waits for timers in
   epoll, whose timeout is in whole milliseconds), so the share of the
   serial limit in 3 also measures how often the process wakes during a
   critical section, not only the gaps between holders. The tables split
   the time per critical section in two: how long the critical sections
   took (CS mean) and the rest (gap/CS), so the two effects can be told
   apart.
4. **Contention**: the same workers with no think time and an empty
   critical section.
5. **Many locks**: 64 goroutines over 8 clients lock and unlock 10,000
   names, each goroutine names of its own, so nothing waits: how many
   uncontended pairs one Redis serves, and what each costs it.

redisync only: many held locks renewed by the watchdog; many goroutines
parked on locks held by another client, then released; handoffs through a
fair lock's queue; a semaphore and a read-write lock under load.

"Redis commands" come from ` + "`INFO commandstats`" + ` and include the commands run
inside scripts (an ` + "`EVALSHA`" + ` that runs ` + "`PTTL`" + ` and ` + "`HGET`" + ` counts 3); "round
trips" are counted by a go-redis hook on each client, a script or a
pipeline counting one. "Server µs/op" is the time Redis spent running
them (` + "`INFO commandstats`" + ` usec), each command once: a script's time
includes that of the commands it calls, so a command run inside scripts
counts only for the share of its calls that the clients sent themselves. Every loop checks that no two holders ever overlap
(no more holders than permits, for the semaphore).
`

// summary compares redisync with each peer on the measures a user
// chooses a lock by, from the results of the scenarios that ran.
func summary(e *env) *table {
	tb := newTable("Summary", "measure", "redisync rlock", "peer", "peer's value", "redisync vs peer")
	faster := func(scenario, metric, peer, what string, show func(float64) string) {
		u, ok1 := e.get(scenario, us, metric)
		p, ok2 := e.get(scenario, peer, metric)
		if !ok1 || !ok2 || u == 0 {
			return
		}
		tb.add(what, show(u), peer, show(p), times(p/u)+" faster")
	}
	more := func(scenario, metric, peer, what string, show func(float64) string) {
		u, ok1 := e.get(scenario, us, metric)
		p, ok2 := e.get(scenario, peer, metric)
		if !ok1 || !ok2 || p == 0 {
			return
		}
		tb.add(what, show(u), peer, show(p), times(u/p)+" as many")
	}
	fewer := func(scenario, metric, peer, what string) {
		u, ok1 := e.get(scenario, us, metric)
		p, ok2 := e.get(scenario, peer, metric)
		if !ok1 || !ok2 || u == 0 {
			return
		}
		tb.add(what, num(u), peer, num(p), times(p/u)+" fewer")
	}
	asDur := func(v float64) string { return dur(time.Duration(v)) }
	asNum := func(v float64) string { return num(v) }
	for _, peer := range []string{rs, rl10, rl1} {
		faster("handoff", "p50", peer, "handoff to a parked waiter, p50", asDur)
	}
	for _, peer := range []string{rs, rl10} {
		more("workers", "cs/s", peer, "workers: critical sections per second", asNum)
	}
	fewer("workers", "cmds", rl1, "workers: Redis commands per critical section")
	if u, ok := e.get("uncontended", us, "ns"); ok {
		if p, ok := e.get("uncontended", bareLk, "ns"); ok && p > 0 {
			tb.add("uncontended Lock+Unlock, time per op", asDur(u), bareLk, asDur(p), fmt.Sprintf("%.2fx its time", u/p))
		}
	}
	asUsec := func(v float64) string { return usecs(v) + " µs" }
	if u, ok := e.get("uncontended", us, "usec"); ok {
		for _, peer := range []string{bareLk, redissonAlg} {
			if p, ok := e.get("uncontended", peer, "usec"); ok && p > 0 {
				tb.add("uncontended Lock+Unlock, server time per op", asUsec(u), peer, asUsec(p), fmt.Sprintf("%.2fx its time", u/p))
			}
		}
		// What fencing costs: the fenced rlock in the redisync column,
		// rlock without it as the peer.
		if f, ok := e.get("uncontended", usFenced, "usec"); ok && u > 0 {
			tb.add("uncontended Lock+Unlock with fencing, server time per op", asUsec(f), us+" without", asUsec(u), fmt.Sprintf("%.2fx its time", f/u))
		}
	}
	if u, ok := e.get("many-locks", us, "ops/s"); ok {
		if p, ok := e.get("many-locks", bareLk, "ops/s"); ok && p > 0 {
			tb.add("many locks: Lock+Unlock per second", asNum(u), bareLk, asNum(p), fmt.Sprintf("%.2fx as many", u/p))
		}
	}
	tb.level = 2
	return tb
}

// times formats a ratio with two significant digits: "1.5x", "12x", "218x".
func times(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.1fx", r)
}

// newMachine gathers the machine's description.
func newMachine(ctx context.Context, e *env, version string) machine {
	return machine{
		cpu: cpuModel(), cpus: runtime.NumCPU(), gomaxprocs: runtime.GOMAXPROCS(0),
		goos: runtime.GOOS, goarch: runtime.GOARCH, goVersion: runtime.Version(),
		server: version, addr: e.addr, rtt: pingRTT(ctx, e.ctl),
	}
}
