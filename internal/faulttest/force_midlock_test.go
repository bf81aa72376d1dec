package faulttest_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
// handle could take it. The force retires the ids it deleted: a reply
// under one, whenever it comes, is given back, and the Lock goes on.
func TestForceUnlockEndsHoldTakenMidLock(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	m := rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease41))

	gate, locked := lockInFlight(t, rdb, faults, m)
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
	// The reply under the id the force deleted is given back, and the
	// Lock takes the lock again, under a new id: whatever it returns, a
	// handle whose Done is open holds the lock in Redis.
	t.Logf("the Lock in flight: %v", <-locked)
	if held, err := m.IsHeld(t.Context()); !isClosed(m.Done()) && (!held || err != nil) {
		t.Errorf("the handle holds (Done open) a lock Redis does not have (IsHeld = %v, %v)", held, err)
	}
	_ = m.Unlock(t.Context())
}

// lockInFlight starts m.Lock, a handle on rdb, with the reply of its
// acquire held back by a gate of faults, and returns the gate and the
// Lock's outcome. The client's first script is its server check: a
// warm-up runs it before the gate is armed, which then holds the acquire.
func lockInFlight(t *testing.T, rdb *redis.Client, faults *clientFaults, m *rlock.Mutex) (*scriptGate, <-chan error) {
	t.Helper()
	warm := rlock.New(rdb, redistest.UniqueName(t)+"-warm")
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
	return gate, locked
}
