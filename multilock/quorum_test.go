package multilock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// Quorum tier: three independent redis-server processes.

// three starts three servers and returns them with a client for each.
func three(t *testing.T) ([]*redistest.Server, []*redis.Client) {
	srvs, rdbs := make([]*redistest.Server, 3), make([]*redis.Client, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
		rdbs[i] = srvs[i].NewClient(t)
	}
	return srvs, rdbs
}

func TestQuorumAvailability(t *testing.T) {
	srvs, rdbs := three(t)
	g := quorum(rdbs, "avail")
	for down := range 3 {
		up := 3 - down
		ok, err := g.TryLock(t.Context())
		if want := up >= 2; ok != want || (!ok && err == nil) {
			t.Fatalf("%d of 3 servers up: TryLock = %v, %v; want %v (and the servers' errors when false)", up, ok, err, want)
		}
		if ok {
			if err := g.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err = g.Lock(ctx)
		cancel()
		if (err == nil) != (up >= 2) {
			t.Fatalf("%d of 3 servers up: Lock = %v", up, err)
		}
		if err == nil {
			if redistest.Closed(g.Done()) {
				t.Fatalf("%d of 3 servers up: Done closed while held", up)
			}
			if err := g.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		srvs[down].Kill()
	}
}

func TestQuorumCounter(t *testing.T) {
	_, rdbs := three(t)
	// Each group on clients of its own, as two processes would be.
	var groups []*multilock.Group
	for range 2 {
		var clients []*redis.Client
		for _, r := range rdbs {
			clients = append(clients, redis.NewClient(r.Options()))
		}
		t.Cleanup(func() {
			for _, c := range clients {
				_ = c.Close()
			}
		})
		groups = append(groups, quorum(clients, "counter"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const iters = 50
	var wg sync.WaitGroup
	errs := make(chan error, len(groups))
	for _, g := range groups {
		wg.Go(func() {
			for range iters {
				if err := incrementUnder(ctx, g, rdbs[0], "counter"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, err := rdbs[0].Get(ctx, "counter").Int(); n != 2*iters || err != nil {
		t.Fatalf("counter = %d, %v; want %d", n, err, 2*iters)
	}
}

func TestQuorumLossOfServers(t *testing.T) {
	redistest.Long(t)
	const watchdog = time.Second
	srvs, rdbs := three(t)
	ctx := t.Context()
	g := quorum(rdbs, "loss", rlock.WithWatchdogTimeout(watchdog))
	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	srvs[0].Kill()
	// Two renewals of the survivors, and the dead member's lease running
	// out: the group still holds.
	select {
	case <-g.Done():
		t.Fatal("Done closed with two of three servers up")
	case <-time.After(2 * watchdog):
	}
	srvs[1].Kill()
	killed := time.Now()
	select {
	case <-g.Done():
		t.Logf("Done closed %v after the second server died", time.Since(killed).Round(time.Millisecond))
	case <-time.After(watchdog + time.Second):
		t.Fatalf("Done still open %v after two of three servers died", watchdog+time.Second)
	}
	if err := g.Unlock(ctx); err == nil {
		t.Fatal("Unlock after losing the majority reported no error")
	}
}
