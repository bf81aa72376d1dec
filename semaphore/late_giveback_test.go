package semaphore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestLeasedLateGiveBack: an Acquire whose first attempt's reply is lost
// gives that attempt's permit back, but the give-back never reaches Redis
// in time, and Acquire attempts again. When Redis then runs the give-back
// (late, as after a stall), it must not release the permit Acquire
// returned: the semaphore would hand out one permit too many. (The first
// attempt's permit is held until the give-back runs: of two permits,
// Acquire takes the other.)
func TestLeasedLateGiveBack(t *testing.T) {
	redistest.Long(t)
	direct, proxy, via := redistest.ProxiedServer(t)
	for _, lease := range []time.Duration{0, time.Minute} {
		t.Run("lease="+lease.String(), func(t *testing.T) {
			ctx := t.Context()
			name := redistest.UniqueName(t)
			key := keyspace.NewNames(name).Lock()
			if err := semaphore.NewLeased(direct, name).SetPermits(ctx, 2); err != nil {
				t.Fatal(err)
			}
			l := semaphore.NewLeased(via, name)
			held := proxy.Hold(redistest.ScriptCall(t, "leased_release.lua", key))
			dropped := proxy.DropReply(redistest.ScriptCall(t, "leased_acquire.lua", key))
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			id, err := l.Acquire(actx, lease)
			if err != nil {
				t.Fatalf("Acquire with a lost reply and a held give-back: %v", err)
			}
			t.Cleanup(func() { _ = semaphore.NewLeased(direct, name).Release(context.Background(), id) })
			mustHaveDropped(t, dropped)
			if !redistest.Closed(held.Caught()) {
				t.Fatal("the give-back was not held: the fault was not injected")
			}
			reply, err := held.Deliver(ctx)
			if err != nil || strings.HasPrefix(reply, "-") {
				t.Fatalf("the late give-back did not run: %q, %v", reply, err)
			}
			n, err := semaphore.NewLeased(direct, name).Available(ctx)
			if n != 1 || err != nil || direct.ZScore(ctx, key, id).Err() != nil {
				t.Fatalf("the give-back Redis ran late (reply %q) released the permit Acquire returned: "+
					"permit %s in Redis: %v; available %d, %v (want 1 of 2)",
					reply, id, direct.ZScore(ctx, key, id).Err() == nil, n, err)
			}
			if err := l.Release(ctx, id); err != nil {
				t.Fatal(err)
			}
		})
	}
}
