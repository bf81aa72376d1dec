package hub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/redistest"
)

// raceTime bounds each of the races below: each round is a few
// milliseconds, and the races were lost within a few hundred rounds.
const raceTime = 3 * time.Second

// On a cluster, the last waiter's Close and a new waiter's Subscribe of
// the same channel race: the SUNSUBSCRIBE of the one must never follow
// the SSUBSCRIBE of the other on the node's connection, or the new waiter
// holds a confirmed subscription that the server has ended.
func TestClusterCloseRacesSubscribe(t *testing.T) {
	redistest.Long(t)
	c := redistest.SharedCluster(t)
	rdb := c.NewClient(t)
	h := hub.New(rdb, true)
	name := redistest.UniqueName(t)
	deadline := time.Now().Add(raceTime)
	for round := 0; time.Now().Before(deadline); round++ {
		a, err := h.Subscribe(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		var b *hub.Subscription
		var berr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; a.Close() }()
		go func() { defer wg.Done(); <-start; b, berr = h.Subscribe(t.Context(), name) }()
		close(start)
		wg.Wait()
		if berr != nil {
			t.Fatal(berr)
		}
		// Both writes are on the node's connection by now; a window for
		// the server to read a SUNSUBSCRIBE written last.
		time.Sleep(20 * time.Millisecond)
		if n := c.ShardNumSub(t, name); n != 1 {
			t.Fatalf("round %d: the new waiter's subscription is confirmed, but SHARDNUMSUB = %d", round, n)
		}
		b.Close()
	}
}

// A channel subscribed on a connection that died before the hub noticed
// is subscribed on the new one: go-redis reconnects within the failed
// SUBSCRIBE, and subscribes again only the channels it knew before it.
func TestSubscribeOnDeadConnection(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	h := hub.New(srv.NewClient(t), false)
	base := redistest.UniqueName(t)
	keep, err := h.Subscribe(t.Context(), base+":keep") // the connection stays
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	deadline := time.Now().Add(raceTime)
	for round := 0; time.Now().Before(deadline); round++ {
		if err := admin.ClientKillByFilter(t.Context(), "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 4 {
			name := fmt.Sprintf("%s:%d:%d", base, round, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				s, err := h.Subscribe(ctx, name)
				if err != nil {
					errs <- fmt.Errorf("round %d: %s: %w (NUMSUB %d)", round, name, err, redistest.NumSub(t, admin, name))
					return
				}
				s.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// With the network stalled, a Subscribe returns when its ctx ends, not
// when the dial or write under way gives up, and so do the Subscribes
// queued behind it; once the network is back, the channels they left
// unsubscribed are subscribed by the next Subscribe.
func TestSubscribeHonoursCtxWhileStalled(t *testing.T) {
	p := redistest.NewProxy(t, redistest.SharedServer(t).Addr())
	h := hub.New(p.NewClient(t), false)
	base := redistest.UniqueName(t)
	p.Stall()
	var wg sync.WaitGroup
	took := make(chan time.Duration, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			if s, err := h.Subscribe(ctx, fmt.Sprintf("%s:%d", base, i)); err == nil {
				s.Close()
				t.Error("Subscribe confirmed with the network stalled")
			}
			took <- time.Since(start)
		}()
	}
	wg.Wait()
	close(took)
	for d := range took {
		// go-redis gives up a stalled dial after seconds (DialTimeout,
		// ReadTimeout); the ctx ends at 200ms.
		if d > time.Second {
			t.Errorf("a Subscribe with a 200ms ctx returned after %v", d)
		}
	}
	p.Resume()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		s, err := h.Subscribe(ctx, fmt.Sprintf("%s:%d", base, i))
		cancel()
		if err != nil {
			t.Fatalf("channel %d after the stall: %v", i, err)
		}
		s.Close()
	}
}
