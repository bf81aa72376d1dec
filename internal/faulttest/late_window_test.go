package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
)

// TestLateCopyInWindowIsGivenBack: a Lock whose first attempt Redis has
// not run when its ctx ends gives the attempt back and fails; then Redis
// runs that attempt after all, before its deadline (a stalled server, a
// TCP retransmission), and takes the free lock under the wait's hold id,
// which the handle has retired and will neither renew nor release. The
// handle gives it back once more when no copy can run any more: the lock
// is free again within the request window and a few seconds, not after
// the whole lease (30s here).
func TestLateCopyInWindowIsGivenBack(t *testing.T) {
	for _, r := range []struct {
		name, script string
		h            newHandle
	}{
		{"rlock", "rlock_acquire.lua", newRlock},
		{"fairlock", "fairlock_acquire.lua", newFairlock},
		{"rwlock-write", "rwlock_writelock.lua", newWriter},
		{"rwlock-read", "rwlock_readlock.lua", newReader},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			direct, proxy, via := redistest.ProxiedServer(t)
			name := redistest.UniqueName(t)
			ctx := t.Context()
			held := proxy.Hold(scriptOn(t, r.script, name))
			sent := time.Now()
			lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if err := r.h(via, name).lock(lctx); err == nil {
				t.Fatal("a Lock whose attempt never reached Redis succeeded")
			}
			if !redistest.Closed(held.Caught()) {
				t.Fatal("the attempt was not held: the fault was not injected")
			}
			// The Lock's own give-back, in the background, runs first.
			if !perclient.AwaitTidied(ctx) {
				t.Fatal("the give-back did not finish")
			}
			if reply, err := held.Deliver(ctx); err != nil || reply[0] == '-' {
				t.Fatalf("the late attempt did not run: %q, %v", reply, err)
			}
			if !exists(ctx, direct, name) {
				t.Fatal("the late attempt took nothing: the case is not made")
			}
			if d := time.Since(sent); d > exactly.RequestWindow/2 {
				t.Skipf("the late copy ran %v after it was sent, too close to the window to tell", d)
			}
			redistest.WaitFor(t, exactly.RequestWindow+8*time.Second, func() bool { return !exists(ctx, direct, name) })
			leftovers(t, direct, name)
		})
	}
}
