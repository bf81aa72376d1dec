package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// SoakEnv sets the length of the chaos soak as a Go duration ("60s"), or
// "off" to skip it. Unset, it runs 60s; 20s when CI is set; 5s with -short.
const SoakEnv = "REDISYNC_SOAK"

// SoakReportEnv names a file the soak appends its summary line to, so that
// CI can print it without running the tests verbosely.
const SoakReportEnv = "REDISYNC_SOAK_REPORT"

func reportSoak(t *testing.T, summary string) {
	path := os.Getenv(SoakReportEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("%s: %v", SoakReportEnv, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, summary)
}

func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv(SoakEnv)
	switch {
	case v == "off":
		t.Skipf("%s=off", SoakEnv)
	case v != "":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration or off", SoakEnv, v)
		}
		return d
	case testing.Short():
		return 5 * time.Second
	case os.Getenv("CI") != "":
		return 20 * time.Second
	}
	return 60 * time.Second
}

// TestChaosSoak runs 16 workers on 4 locks over 3 clients that reach
// Redis through their own fault proxy (the third client's 8 workers share
// its 4 handles, two goroutines each), while random
// faults hit the clients, the network and the server: stalls shorter and
// longer than the lease, cut connections, lost replies, killed pub/sub
// connections, CLIENT PAUSE WRITE and restarts (with an fsynced AOF, so
// the locks survive them). Every critical section checks that no other
// holder of its lock still believes it holds it, and bumps an exact
// per-lock counter. It prints one summary line; violations must be 0.
func TestChaosSoak(t *testing.T) {
	forEach(t, func(t *testing.T, p primitive) {
		if !p.costly {
			t.Skip("the soak runs for one primitive only, to bound the suite's time")
		}
		d := soakDuration(t)
		const (
			lease   = time.Second
			workers = 16
			locks   = 4
			clients = 3
		)
		srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
		admin := srv.NewClient(t)
		proxies := make([]*redistest.Proxy, clients)
		for i := range proxies {
			proxies[i] = redistest.NewProxy(t, srv.Addr())
		}
		names := make([]string, locks)
		xs := make([]*exclusion, locks)
		for i := range names {
			names[i] = redistest.UniqueName(t)
			xs[i] = newExclusion()
		}

		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var ops, lockErrs, lost atomic.Int64
		var wg sync.WaitGroup
		// The last client's 8 workers share its 4 handles, two goroutines
		// on each, as goroutines of a process share one handle: their
		// holds pass between them locally (rlock) while the faults hit.
		handles := make(map[[2]int]locker)
		for i := range workers {
			lockIdx, clientIdx := i%locks, min(i/locks, clients-1)
			l, ok := handles[[2]int{lockIdx, clientIdx}]
			if !ok {
				l = p.new(proxies[clientIdx].NewClient(t), names[lockIdx], lease)
				handles[[2]int{lockIdx, clientIdx}] = l
			}
			x := xs[lockIdx]
			wg.Go(func() {
				for ctx.Err() == nil {
					lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
					err := l.Lock(lctx)
					lcancel()
					if err != nil {
						if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("Lock: %v (neither success nor the ctx's deadline)", err)
						}
						lockErrs.Add(1)
						continue
					}
					ops.Add(1)
					v := x.enter(t, l)
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					if isClosed(l.Done()) {
						lost.Add(1)
					}
					x.leave(t, l, v)
					_ = unlockRetry(l, p.notHeld)
					ops.Add(1)
				}
			})
		}

		keys := make([]string, locks)
		for i, n := range names {
			keys[i] = p.key(n)
		}
		faults := injectFaults(ctx, t, srv, admin, proxies, keys)
		wg.Wait()

		var violations, completed int64
		for _, x := range xs {
			violations += x.violations.Load()
			completed += x.completed.Load()
			if c := x.counter.Load(); c != x.completed.Load() {
				violations++
				t.Errorf("counter %d, but %d critical sections completed", c, x.completed.Load())
			}
		}
		summary := fmt.Sprintf("soak %s: %v, %d workers on %d locks: %d operations (%d critical sections, %d holds lost, %d Lock timeouts), %d faults injected (%s), %d violations",
			p.name, d, workers, locks, ops.Load(), completed, lost.Load(), lockErrs.Load(), faults.total(), faults, violations)
		t.Log(summary)
		reportSoak(t, summary)
		if violations != 0 {
			t.Errorf("%d violations", violations)
		}
		if completed == 0 || faults.total() == 0 {
			t.Error("the soak did no work or injected no fault")
		}
	})
}

// faultCounts counts the faults injected, by kind.
type faultCounts map[string]int

func (f faultCounts) total() int {
	n := 0
	for _, c := range f {
		n += c
	}
	return n
}

func (f faultCounts) String() string {
	var parts []string
	for k, c := range f {
		parts = append(parts, fmt.Sprintf("%s %d", k, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// injectFaults injects a random fault every 200-700ms until ctx ends, and
// leaves everything healed. Lost replies are counted when they happened.
func injectFaults(ctx context.Context, t *testing.T, srv *redistest.Server, admin *redis.Client, proxies []*redistest.Proxy, keys []string) faultCounts {
	counts := faultCounts{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	pause := func(min, max time.Duration) {
		timer.Reset(min + rand.N(max-min))
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	for {
		pause(200*time.Millisecond, 700*time.Millisecond)
		if ctx.Err() != nil {
			break
		}
		px := proxies[rand.IntN(len(proxies))]
		switch rand.IntN(7) {
		case 0:
			px.Stall()
			pause(100*time.Millisecond, 500*time.Millisecond)
			px.Resume()
			counts["stall"]++
		case 1:
			px.Stall() // longer than the lease: its holds are lost
			pause(1200*time.Millisecond, 1800*time.Millisecond)
			px.Resume()
			counts["long stall"]++
		case 2:
			px.Cut()
			counts["cut"]++
		case 3:
			key := keys[rand.IntN(len(keys))]
			px.DropReply(func(args []string) bool { return redistest.IsScriptCall(args, key) })
		case 4:
			if admin.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err() == nil {
				counts["pub/sub kill"]++
			}
		case 5:
			ms := 200 + rand.IntN(600)
			if admin.Do(context.Background(), "CLIENT", "PAUSE", ms, "WRITE").Err() == nil {
				counts["pause"]++
			}
		case 6:
			srv.Shutdown()
			srv.Restart(t)
			counts["restart"]++
		}
	}
	for _, px := range proxies {
		counts["lost reply"] += px.Dropped()
	}
	return counts
}
