package faulttest_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// The linearizability checks record Lock/Unlock histories from 4 clients
// under faults 1 (holders SIGKILLed), 3 (Redis restarted) and 4 (pub/sub
// connections killed) and check them with porcupine against a mutex whose
// holds may also end by loss: a hold found lost (Done closed, Unlock said
// not held, the holder died) is an operation spanning from the last fault
// injected during the hold (or the acquisition) to the moment the loss was
// seen, so the model may end the hold anywhere in between, and nowhere
// else.

const linClients = 4

func TestLinearizableHoldersKilled(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const (
			lease = time.Second
			kills = 4
		)
		srv := redistest.SharedServer(t)
		name := redistest.UniqueName(t)
		var h history
		procs := make([]*churnProc, linClients)
		nextID := 0
		start := func(slot int) {
			procs[slot] = startChurnProc(t, p, nextID, srv.Addr(), name, lease, &h)
			nextID++
		}
		for i := range procs {
			start(i)
		}
		deadline := time.Now().Add(30 * time.Second)
		killed := 0
		for killed < kills && time.Now().Before(deadline) {
			slot := -1
			for i, c := range procs {
				if c.isHolding() {
					slot = i
				}
			}
			if slot < 0 {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			procs[slot].kill(&h)
			killed++
			start(slot)
			// Let the survivors (and the newcomer) take turns for a while
			// before the next kill.
			next := h.count(opAcquire) + 8 + rand.IntN(8)
			for h.count(opAcquire) < next && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		for _, c := range procs {
			c.kill(&h)
		}
		if killed < kills {
			t.Fatalf("only %d of %d kills hit a holder", killed, kills)
		}
		n := h.check(t)
		acquired := h.count(opAcquire)
		t.Logf("%d operations from %d processes (%d acquisitions), %d holders killed", n, nextID, acquired, killed)
		if acquired < 2*kills {
			t.Errorf("only %d acquisitions: the history is too short to mean much", acquired)
		}
	})
}

func TestLinearizableRedisRestarted(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const lease = time.Second
		srv := redistest.Start(t)
		name := redistest.UniqueName(t)
		var h history
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() {
			runChurners(ctx, t, p, linClients, func(int) redis.UniversalClient { return srv.NewClient(t) },
				name, lease, 20*time.Millisecond, &h)
		})
		for _, down := range []time.Duration{0, 1200 * time.Millisecond, 300 * time.Millisecond} {
			time.Sleep(time.Second)
			h.fault(now())
			srv.Shutdown()
			time.Sleep(down)
			srv.Restart(t)
		}
		time.Sleep(time.Second)
		cancel()
		wg.Wait()
		n := h.check(t)
		t.Logf("%d operations (%d acquisitions, %d holds lost) through 3 restarts", n, h.count(opAcquire), h.count(opLost))
		if h.count(opAcquire) < 20 {
			t.Errorf("only %d acquisitions", h.count(opAcquire))
		}
	})
}

func TestLinearizablePubSubKilled(t *testing.T) {
	forEach(t, func(t *testing.T, p primitive) {
		const lease = time.Second
		srv := redistest.Start(t)
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		var h history
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		wg.Go(func() {
			runChurners(ctx, t, p, linClients, func(int) redis.UniversalClient { return srv.NewClient(t) },
				name, lease, 20*time.Millisecond, &h)
		})
		kills := 0
		tick := time.NewTicker(200 * time.Millisecond)
		for ctx.Err() == nil {
			select {
			case <-tick.C:
				if admin.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err() == nil {
					kills++
				}
			case <-ctx.Done():
			}
		}
		tick.Stop()
		wg.Wait()
		n := h.check(t)
		t.Logf("%d operations (%d acquisitions) through %d pub/sub kills", n, h.count(opAcquire), kills)
		if lost := h.count(opLost); lost != 0 {
			t.Errorf("%d holds lost, want none: killing pub/sub connections must not cost a hold", lost)
		}
		if h.count(opAcquire) < 20 {
			t.Errorf("only %d acquisitions", h.count(opAcquire))
		}
	})
}
