package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A write hold the handle gave up as lost (its renewals stalled past its
// local validity) while it still stood in Redis is not the handle's any
// more. An RLock of the same handle must not take it on: it used to come
// back as a write level of the handle's that no caller unlocks, which the
// watchdog then renewed for as long as the handle lived, keeping every
// other writer out. The read waits until the write hold lapses; a write
// Lock of the handle meanwhile adopts it with a new token (the refused
// read does not make the handle forget that it gave the hold up).
func TestRWLockReadAfterGivenUpWrite(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	const lease = 2 * time.Second
	// givenUp returns a fenced handle whose write hold, with the token
	// returned, was given up as lost and still stands in Redis for stand.
	givenUp := func(t *testing.T, name string, stand time.Duration) (*rwlock.RWMutex, uint64) {
		proxy := redistest.NewProxy(t, srv.Addr())
		rw := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease), rwlock.WithFencing())
		if err := rw.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		first := rw.Token()
		proxy.Stall()
		redistest.WaitFor(t, 2*lease, func() bool { return isClosed(rw.Done()) })
		if !admin.PExpire(t.Context(), internal.NewNames(name).Lock(), stand).Val() {
			t.Fatal("the write hold was gone from Redis when the handle gave it up")
		}
		proxy.Resume()
		return rw, first
	}
	otherWriterLocks := func(t *testing.T, name string) {
		t.Helper()
		ok, err := rwlock.New(srv.NewClient(t), name).TryLock(t.Context())
		if err != nil || !ok {
			t.Fatalf("another writer's TryLock after the handle let go: %v %v, want the lock (hash %v)", ok, err,
				admin.HGetAll(t.Context(), internal.NewNames(name).Lock()).Val())
		}
	}

	t.Run("write adopts anew", func(t *testing.T) {
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute)
		if ok, err := rw.TryRLock(t.Context()); err != nil || ok {
			t.Fatalf("TryRLock under the write hold given up: %v %v, want refused", ok, err)
		}
		if err := rw.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if again := rw.Token(); again <= first {
			t.Fatalf("token of the adopted write hold %d, want above the one given up (%d)", again, first)
		}
		if err := rw.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		otherWriterLocks(t, name)
	})

	t.Run("read waits for the lapse", func(t *testing.T) {
		name := redistest.UniqueName(t)
		rw, _ := givenUp(t, name, lease)
		ctx, cancel := context.WithTimeout(t.Context(), 4*lease)
		defer cancel()
		if err := rw.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.RUnlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		otherWriterLocks(t, name)
	})
}
