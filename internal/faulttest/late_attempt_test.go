package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// TestLateReadAttemptAfterWrite: an RLock whose attempt Redis has not run
// when its ctx ends gives it back (nothing to give back yet) and fails;
// the handle then takes the write lock. When Redis runs that read attempt
// late, it must be refused as late: the handle's write attempt came after
// it. Were it to take a read level, the write Unlock would turn it into a
// read hold (a downgrade) that nobody releases and the watchdog renews for
// ever: the lock would stay read-locked.
func TestLateReadAttemptAfterWrite(t *testing.T) {
	direct, proxy, via := redistest.ProxiedServer(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	rw := rwlock.New(via, name)

	held := proxy.Hold(scriptOn(t, "rwlock_readlock.lua", name))
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := rw.RLock(rctx); err == nil {
		t.Fatal("RLock whose attempt never reached Redis succeeded")
	}
	if !redistest.Closed(held.Caught()) {
		t.Fatal("the read attempt was not held: the fault was not injected")
	}
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if reply, err := held.Deliver(ctx); err != nil || reply[0] == '-' {
		t.Fatalf("the late read attempt did not run: %q, %v", reply, err)
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	took, err := takes(ctx, rwlock.New(direct, name))
	if !took || err != nil {
		t.Fatalf("after the write Unlock another handle's TryLock = %v, %v (want true): lock hash %v",
			took, err, direct.HGetAll(ctx, mainKey(name)).Val())
	}
	leftovers(t, direct, name)
}
