package faulttest_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// ForceUnlock of a handle while a goroutine of the same handle is in
// Lock, whose acquire ran in Redis before the force read the lock and
// whose reply comes after: the force deletes that hold. It used to end
// only the hold the handle had when ForceUnlock began (none), so the
// goroutine's Lock went on to hold a lock that Redis no longer had,
// renewed until the watchdog's next renewal found it gone, while another
// handle could take it. A hold whose id the force found in Redis is over
// too, whenever its reply comes.
func TestForceUnlockEndsHoldTakenMidLock(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	m := rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease41))

	gate := faults.holdNextReply()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(t.Context()) }()
	gate.mustCatch(t, "the Lock's acquire was not held")
	forced := make(chan error, 1)
	go func() {
		ok, err := m.ForceUnlock(t.Context())
		if err == nil && !ok {
			t.Error("ForceUnlock found nothing to delete")
		}
		forced <- err
	}()
	redistest.WaitFor(t, 5*time.Second, func() bool {
		return admin.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val() == 0
	})
	close(gate.open) // the acquire's reply, after the force
	if err := <-forced; err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	t.Logf("the Lock in flight: %v", <-locked)
	if !isClosed(m.Done()) {
		t.Error("the handle still holds the lock that ForceUnlock deleted")
	}
	_ = m.Unlock(t.Context())
}
