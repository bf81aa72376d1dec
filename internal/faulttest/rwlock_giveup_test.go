package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A hold the handle gave up as lost (its renewals stalled past its local
// validity) while it still stood in Redis is not the handle's any more,
// in either mode, and is never taken back: its release is owed by its
// hold id and sent before the handle's next attempt. So the next hold, of
// either mode, is a new one under a new id (a new token for a write),
// none of the old hold's levels comes back with it (a level no caller
// releases, renewed by the watchdog for as long as the handle lived), a
// Lock after a read hold given up is no upgrade, and nothing is left
// behind once the new hold is released.
func TestRWLockAfterGivenUpHold(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	const lease = 2 * time.Second
	// givenUp returns a fenced handle whose hold, taken by take, was given
	// up as lost and still stands in Redis for stand, and that hold's
	// token. take calls giveUp while it holds.
	givenUp := func(t *testing.T, name string, stand time.Duration, take func(t *testing.T, rw *rwlock.RWMutex, giveUp func())) (*rwlock.RWMutex, uint64) {
		proxy := redistest.NewProxy(t, srv.Addr())
		rw := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease), rwlock.WithFencing())
		var first uint64
		take(t, rw, func() {
			first = rw.Token()
			proxy.Stall()
			// Every key of the name (the lock and the handle's read
			// lease) stands for stand from now, which the stalled
			// renewals can no longer change: past the handle's giving
			// up, as on a server whose clock runs slow.
			keys, err := admin.Keys(t.Context(), "*{"+name+"}*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				admin.PExpire(t.Context(), k, stand)
			}
			redistest.WaitFor(t, 2*lease, func() bool { return isClosed(rw.Done()) })
			if admin.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val() == 0 {
				t.Fatal("the hold was gone from Redis when the handle gave it up")
			}
			proxy.Resume()
		})
		return rw, first
	}
	write := func(t *testing.T, rw *rwlock.RWMutex, giveUp func()) {
		if err := rw.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		giveUp()
	}
	otherWriterLocks := func(t *testing.T, name string) {
		t.Helper()
		other := rwlock.New(srv.NewClient(t), name)
		ok, err := other.TryLock(t.Context())
		if err != nil || !ok {
			t.Fatalf("another writer's TryLock after the handle let go: %v %v, want the lock (hash %v)", ok, err,
				admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())
		}
		if err := other.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	// nextHold takes a new hold of the handle with take, checks that the
	// hold given up (whose token was first) is gone from Redis with none
	// of its levels left, releases the new hold with release and lets
	// another writer in.
	nextHold := func(t *testing.T, rw *rwlock.RWMutex, name string, first uint64, take func() (bool, error), release func() error, write bool) {
		t.Helper()
		if ok, err := take(); err != nil || !ok {
			t.Fatalf("the handle's next hold: %v %v, want taken (the hold given up released first)", ok, err)
		}
		fields := redistest.Holders(t.Context(), admin, keyspace.NewNames(name).Lock())
		if len(fields) != 2 {
			t.Fatalf("lock hash %v, want the mode and the new hold's one level", fields)
		}
		if write && rw.Token() <= first {
			t.Fatalf("token of the next write hold %d, want above the one given up (%d)", rw.Token(), first)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		otherWriterLocks(t, name)
	}
	lock := func(rw *rwlock.RWMutex) (func() (bool, error), func() error) {
		return func() (bool, error) { return rw.TryLock(context.Background()) }, func() error { return rw.Unlock(context.Background()) }
	}
	rlock := func(rw *rwlock.RWMutex) (func() (bool, error), func() error) {
		return func() (bool, error) { return rw.TryRLock(context.Background()) }, func() error { return rw.RUnlock(context.Background()) }
	}

	t.Run("read after a write given up", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute, write)
		take, release := rlock(rw)
		nextHold(t, rw, name, first, take, release, false)
	})

	t.Run("write after a write given up", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute, write)
		take, release := lock(rw)
		nextHold(t, rw, name, first, take, release, true)
	})

	t.Run("write after a write and a read given up", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		// A read level taken under the write hold, in the ctx that carries
		// it: both are given up together.
		rw, first := givenUp(t, name, time.Minute, func(t *testing.T, rw *rwlock.RWMutex, giveUp func()) {
			_ = rw.Do(t.Context(), func(ctx context.Context) error {
				if err := rw.RLock(ctx); err != nil {
					t.Fatal(err)
				}
				giveUp()
				return nil
			})
		})
		take, release := lock(rw)
		nextHold(t, rw, name, first, take, release, true)
	})

	t.Run("write after a read given up is no upgrade", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute, func(t *testing.T, rw *rwlock.RWMutex, giveUp func()) {
			if err := rw.RLock(t.Context()); err != nil {
				t.Fatal(err)
			}
			giveUp()
		})
		take, release := lock(rw)
		nextHold(t, rw, name, first, take, release, true)
	})
}

// A write Unlock that fails (its release held back past the release's
// bound) under read levels the writer took while it held (a downgrade)
// ends the write level for the handle, which owes its release: the
// handle's next release, the RUnlock, sends it again first, and the lock
// is free after it. The write level used to stay counted, with nobody to
// unlock it (Unlock said it was not held), renewed by the watchdog for as
// long as the handle lived.
func TestRWLockFailedWriteUnlockUnderRead(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rw := rwlock.New(proxy.NewClient(t), name)
	held := proxy.Hold(scriptOn(t, "rwlock_writeunlock.lua", name))
	err := rw.Do(t.Context(), func(ctx context.Context) error {
		return rw.RLock(ctx) // kept past Do: a downgrade
	})
	if err == nil {
		t.Fatal("Do's Unlock succeeded though its release was held back")
	}
	select {
	case <-held.Caught():
	default:
		t.Fatal("the write release was not held back: the fault was not injected")
	}
	if err := rw.RUnlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val(); n != 0 {
		t.Fatalf("the lock is still held after the RUnlock: %v", admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())
	}
}

// The owed release of such a write level fails again (its copy held back,
// then the connection cut) when the RUnlock sends it first: the RUnlock
// goes on and releases the read level, and Redis reports the write level
// still standing. The handle does not count it again: its hold ends
// (Done closes), and the write level lapses with its lease instead of
// being renewed for as long as the handle lives.
func TestRWLockOwedWriteReleaseFailsAgain(t *testing.T) {
	const lease = 2 * time.Second
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rw := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease))
	writeUnlock := scriptOn(t, "rwlock_writeunlock.lua", name)
	proxy.Hold(writeUnlock)
	if err := rw.Do(t.Context(), func(ctx context.Context) error { return rw.RLock(ctx) }); err == nil {
		t.Fatal("Do's Unlock succeeded though its release was held back")
	}
	again := proxy.Hold(writeUnlock)
	unlocked := make(chan error, 1)
	go func() { unlocked <- rw.RUnlock(t.Context()) }()
	select {
	case <-again.Caught():
	case <-time.After(10 * time.Second):
		t.Fatal("the owed write release was not sent again first")
	}
	proxy.Cut()
	if err := <-unlocked; err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 2*lease, func() bool { return isClosed(rw.Done()) })
	lock := keyspace.NewNames(name).Lock()
	redistest.WaitFor(t, 3*lease, func() bool { return admin.Exists(t.Context(), lock).Val() == 0 })
}
