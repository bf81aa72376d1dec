package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 7: Sentinel failover. A primary, one replica and three Sentinels;
// the holder took the lock with replica acknowledgement, then the primary
// is SIGKILLed. The lock survives on the promoted replica, the holder
// keeps it (renewals go to the new primary), and the library recovers
// there: after Unlock another client acquires. With no replica left, an
// acknowledged acquisition fails with ErrNotReplicated and leaves nothing.
func TestSentinelFailover(t *testing.T) {
	forEach(t, func(t *testing.T, p primitive) {
		if p.newAcked == nil {
			t.Skip("no replica acknowledgement")
		}
		const lease = 8 * time.Second // outlasts the failover
		g := redistest.StartSentinel(t)
		name := redistest.UniqueName(t)
		holder := p.newAcked(g.NewFailoverClient(t), name, lease, 1, time.Second)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		old := g.Master(t)
		var replica *redistest.Server
		for _, n := range g.Nodes() {
			if n != old {
				replica = n
			}
		}
		// Acknowledged means on the replica already, not eventually.
		if n := replica.NewClient(t).Exists(t.Context(), p.key(name)).Val(); n != 1 {
			t.Fatal("the acknowledged lock is not on the replica")
		}

		killed := time.Now()
		old.Stop()
		promoted := g.WaitFailover(t, old, 30*time.Second)
		t.Logf("failover to %s took %v", promoted.Addr(), time.Since(killed).Round(time.Millisecond))
		direct := promoted.NewClient(t)
		if n := direct.Exists(t.Context(), p.key(name)).Val(); n != 1 {
			t.Fatal("the lock did not survive the failover")
		}

		other := p.new(g.NewFailoverClient(t), name, lease)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		err := other.Lock(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("another client's Lock while the holder holds = %v, want a timeout", err)
		}
		// The holder renews on the new primary: the lease gets extended.
		redistest.WaitFor(t, lease, func() bool {
			return direct.PTTL(t.Context(), p.key(name)).Val() > lease-lease/4
		})
		if isClosed(holder.Done()) {
			t.Fatal("the holder lost a lock that survived the failover")
		}
		if err := holder.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock on the new primary: %v", err)
		}
		ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := other.Lock(ctx); err != nil {
			t.Fatalf("Lock on the new primary: %v", err)
		}
		if err := other.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}

		// The new primary has no replica: acknowledgement cannot come.
		name2 := redistest.UniqueName(t)
		lonely := p.newAcked(g.NewFailoverClient(t), name2, lease, 1, 200*time.Millisecond)
		err = lonely.Lock(ctx)
		if !p.ackFailed(err) {
			t.Fatalf("acknowledged Lock without replicas = %v, want not replicated", err)
		}
		if n := direct.Exists(t.Context(), p.key(name2)).Val(); n != 0 {
			t.Fatal("the unacknowledged acquisition was left behind")
		}
		if !isClosed(lonely.Done()) {
			t.Fatal("Done open after a failed Lock")
		}
	})
}
