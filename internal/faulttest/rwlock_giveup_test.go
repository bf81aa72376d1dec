package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A hold the handle gave up as lost (its renewals stalled past its local
// validity) while it still stood in Redis is not the handle's any more,
// in either mode. Its next attempt of the other mode must not take that
// mode's level on as its own: a write level that came back with an RLock,
// or a read level with the write hold a Lock adopts, was a level no
// caller released, which the handle's watchdog then renewed for as long
// as the handle lived, keeping every other writer out. Nor is a Lock
// after a read hold given up an upgrade: it waits, as behind another
// reader. A write Lock adopts a write hold given up with a new token,
// also after a refused read (which does not make the handle forget that
// it gave the hold up).
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

	// adoptsAnew checks that rw's Lock adopts the write hold given up with
	// a token above first, and that its Unlock frees the lock.
	adoptsAnew := func(t *testing.T, rw *rwlock.RWMutex, name string, first uint64) {
		t.Helper()
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
	}

	t.Run("write adopts anew after a refused read", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute, write)
		if ok, err := rw.TryRLock(t.Context()); err != nil || ok {
			t.Fatalf("TryRLock under the write hold given up: %v %v, want refused", ok, err)
		}
		adoptsAnew(t, rw, name, first)
	})

	t.Run("read waits for the write to lapse", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, _ := givenUp(t, name, lease, write)
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

	t.Run("write adoption drops the read level", func(t *testing.T) {
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
		if n := admin.HLen(t.Context(), keyspace.NewNames(name).Lock()).Val(); n < 5 {
			t.Fatalf("the hold given up has %d fields, want a write and a read level (mode, both levels and their marks)", n)
		}
		adoptsAnew(t, rw, name, first)
	})

	t.Run("write after a read given up waits", func(t *testing.T) {
		t.Parallel()
		name := redistest.UniqueName(t)
		rw, _ := givenUp(t, name, lease, func(t *testing.T, rw *rwlock.RWMutex, giveUp func()) {
			if err := rw.RLock(t.Context()); err != nil {
				t.Fatal(err)
			}
			giveUp()
		})
		ok, err := rw.TryLock(t.Context())
		if errors.Is(err, rwlock.ErrUpgradeNotSupported) || ok {
			t.Fatalf("TryLock after the read hold was given up: %v %v, want refused as behind a reader", ok, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 4*lease)
		defer cancel()
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		otherWriterLocks(t, name)
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
