package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 2: the network between the holder and Redis stalls for longer than
// the lease. The holder's Done must close before another client can
// acquire; the other client then acquires.
func TestStalledHolderLearnsFirst(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const lease = time.Second
		srv := redistest.SharedServer(t)
		name := redistest.UniqueName(t)
		proxy := redistest.NewProxy(t, srv.Addr())
		holderRDB := proxy.NewClient(t)
		holder := p.new(holderRDB, name, lease)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		other := p.new(srv.NewClient(t), name, lease)

		proxy.Stall()
		stalled := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := other.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(stalled)
		if !isClosed(holder.Done()) {
			t.Fatal("another client acquired while the stalled holder's Done was still open")
		}
		t.Logf("other client acquired %v after the stall began", took.Round(time.Millisecond))
		// The last renewal was at most a third of the lease before the stall.
		if took < lease*2/3-50*time.Millisecond || took > lease+time.Second {
			t.Errorf("other client acquired %v after the stall, want between 2/3 of the lease and lease + 1s", took)
		}

		proxy.Resume()
		if err := holder.Unlock(t.Context()); !p.notHeld(err) {
			t.Errorf("stale holder's Unlock after the stall = %v, want not held", err)
		}
		if !p.held(t.Context(), srv.NewClient(t), name) {
			t.Fatal("the stale holder's Unlock released the new holder's lock")
		}
		if err := other.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
