package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestForceUnlockEndsHoldTakenMidLock with a deadline on ForceUnlock's
// ctx: the force deletes the hold of the Lock in flight (its acquire ran
// before the force read the lock), then waits for the handle's op to end
// that hold once recorded (dropForced). The op is the Lock's until the
// acquire's reply comes, and a ctx that ends first makes dropForced give
// up and end only the hold the handle had when ForceUnlock began (none):
// ForceUnlock returns true, and the Lock goes on to hold, with Done open,
// the lock the force deleted, while another handle takes it, until the
// watchdog's next renewal (a third of the lease) finds it gone.
func TestForceUnlockWithDeadlineEndsHoldTakenMidLock(t *testing.T) {
	t.Skip("defect: ForceUnlock whose ctx ends while the handle's op is busy skips dropForced's check of the aimed holds: a hold taken mid-Lock survives the force")
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	m := rlock.New(rdb, name) // the default lease: no renewal within the test
	other := rlock.New(srv.NewClient(t), name)

	// The client's first script is its server check: run it before
	// arming the gate, which then holds the Lock's acquire.
	warm := rlock.New(rdb, name+"-warm")
	if ok, err := warm.TryLock(t.Context()); !ok || err != nil {
		t.Fatalf("warm-up TryLock = %v, %v", ok, err)
	}
	if err := warm.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	gate := faults.holdNextReply()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(t.Context()) }()
	gate.mustCatch(t, "the Lock's acquire was not held")

	fctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()

	ok, err := m.ForceUnlock(fctx)
	if err != nil || !ok {
		t.Fatalf("ForceUnlock = %v, %v; want the Lock's hold deleted", ok, err)
	}
	close(gate.open) // the acquire's reply, after the force
	if err := <-locked; err != nil {
		t.Skipf("the Lock in flight failed (%v): nothing held", err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(t.Context())) }()
	if admin.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val() == 0 && !isClosed(m.Done()) {
		took, _ := other.TryLock(t.Context())
		if took {
			defer func() { _ = other.Unlock(t.Context()) }()
		}
		t.Errorf("the handle holds (Done open) the lock ForceUnlock deleted; another handle's TryLock = %v", took)
	}
}
