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
// ctx, shorter than the hold-up of the Lock's reply: a force that waited
// for the handle's scripts to end the Lock's hold once recorded gave up
// at its deadline, and the Lock went on to hold, with Done open, the lock
// the force deleted, while another handle took it. The force retires the
// ids it deleted instead, waiting for nothing: the late reply is given
// back, and the Lock takes the lock again under a new id.
func TestForceUnlockWithDeadlineEndsHoldTakenMidLock(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	m := rlock.New(rdb, name) // the default lease: no renewal within the test
	other := rlock.New(srv.NewClient(t), name)

	gate, locked := lockInFlight(t, rdb, faults, m)

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
