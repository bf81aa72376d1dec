package semaphore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
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

// TestLeasedLostReplyKeepsPermit: an Acquire whose first attempt's reply
// is lost gives that attempt back, and its next attempt takes a permit.
// The second give-back of the lost attempt, sent once no copy of it can
// run any more (hold.GiveBackAgain), must not release the permit Acquire
// returned: the next attempt takes it under an id of its own.
func TestLeasedLostReplyKeepsPermit(t *testing.T) {
	redistest.Long(t)
	direct, proxy, via := redistest.ProxiedServer(t)
	for _, lease := range []time.Duration{0, time.Minute} {
		t.Run("lease="+lease.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			name := redistest.UniqueName(t)
			key := keyspace.NewNames(name).Lock()
			if err := semaphore.NewLeased(direct, name).SetPermits(ctx, 2); err != nil {
				t.Fatal(err)
			}
			l := semaphore.NewLeased(via, name)
			dropped := proxy.DropReply(redistest.ScriptCall(t, "leased_acquire.lua", key))
			began := time.Now()
			id, err := l.Acquire(ctx, lease)
			if err != nil {
				t.Fatalf("Acquire with a lost reply: %v", err)
			}
			mustHaveDropped(t, dropped)
			// Past every second give-back of the lost attempt.
			time.Sleep(time.Until(began.Add(exactly.RequestWindow + 3*time.Second))) // waiting out a timer of the library, not synchronising
			if err := direct.ZScore(ctx, key, id).Err(); err != nil {
				t.Fatalf("the permit Acquire returned is gone from Redis: %v", err)
			}
			if err := l.Release(ctx, id); err != nil {
				t.Fatalf("Release of the permit Acquire returned: %v", err)
			}
			if n, err := semaphore.NewLeased(direct, name).Available(ctx); n != 2 || err != nil {
				t.Fatalf("available after Release = %d, %v; want 2", n, err)
			}
		})
	}
}

// TestLeasedLateCopyInWindowIsGivenBack: an attempt of a fixed-lease
// Acquire held up on its way (its ctx ends meanwhile) is given back, and
// Redis then runs it, after the give-back but before its deadline: it
// takes a permit under an id nobody will release. The handle gives it
// back once more when no copy can run any more, so the permit returns
// within the request window and a few seconds, not after its lease.
func TestLeasedLateCopyInWindowIsGivenBack(t *testing.T) {
	redistest.Long(t)
	direct, proxy, via := redistest.ProxiedServer(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	key := keyspace.NewNames(name).Lock()
	if err := semaphore.NewLeased(direct, name).SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	held := proxy.Hold(redistest.ScriptCall(t, "leased_acquire.lua", key))
	sent := time.Now()
	actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := semaphore.NewLeased(via, name).Acquire(actx, time.Minute); err == nil {
		t.Fatal("an Acquire whose attempt never reached Redis succeeded")
	}
	if !redistest.Closed(held.Caught()) {
		t.Fatal("the attempt was not held: the fault was not injected")
	}
	if !perclient.AwaitTidied(ctx) {
		t.Fatal("the give-back did not finish")
	}
	if reply, err := held.Deliver(ctx); err != nil || strings.HasPrefix(reply, "-") {
		t.Fatalf("the late attempt did not run: %q, %v", reply, err)
	}
	available := func() int64 { n, _ := semaphore.NewLeased(direct, name).Available(ctx); return n }
	if available() != 0 {
		t.Fatal("the late attempt took no permit: the case is not made")
	}
	if d := time.Since(sent); d > exactly.RequestWindow/2 {
		t.Skipf("the late copy ran %v after it was sent, too close to the window to tell", d)
	}
	redistest.WaitFor(t, exactly.RequestWindow+8*time.Second, func() bool { return available() == 1 })
}
