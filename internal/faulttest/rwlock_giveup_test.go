package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
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
	givenUp := func(t *testing.T, name string, stand time.Duration, take func(rw *rwlock.RWMutex, giveUp func())) (*rwlock.RWMutex, uint64) {
		proxy := redistest.NewProxy(t, srv.Addr())
		rw := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease), rwlock.WithFencing())
		var first uint64
		take(rw, func() {
			first = rw.Token()
			proxy.Stall()
			redistest.WaitFor(t, 2*lease, func() bool { return isClosed(rw.Done()) })
			// Every key of the name: the lock and the handle's read lease.
			keys, err := admin.Keys(t.Context(), "*{"+name+"}*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				admin.PExpire(t.Context(), k, stand)
			}
			if admin.Exists(t.Context(), internal.NewNames(name).Lock()).Val() == 0 {
				t.Fatal("the hold was gone from Redis when the handle gave it up")
			}
			proxy.Resume()
		})
		return rw, first
	}
	write := func(rw *rwlock.RWMutex, giveUp func()) {
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
				admin.HGetAll(t.Context(), internal.NewNames(name).Lock()).Val())
		}
		if err := other.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("write adopts anew after a refused read", func(t *testing.T) {
		name := redistest.UniqueName(t)
		rw, first := givenUp(t, name, time.Minute, write)
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

	t.Run("read waits for the write to lapse", func(t *testing.T) {
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
		name := redistest.UniqueName(t)
		// A read level taken under the write hold, in the ctx that carries
		// it: both are given up together.
		rw, first := givenUp(t, name, time.Minute, func(rw *rwlock.RWMutex, giveUp func()) {
			_ = rw.Do(t.Context(), func(ctx context.Context) error {
				if err := rw.RLock(ctx); err != nil {
					t.Fatal(err)
				}
				giveUp()
				return nil
			})
		})
		if n := admin.HLen(t.Context(), internal.NewNames(name).Lock()).Val(); n < 5 {
			t.Fatalf("the hold given up has %d fields, want a write and a read level (mode, both levels and their marks)", n)
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

	t.Run("write after a read given up waits", func(t *testing.T) {
		name := redistest.UniqueName(t)
		rw, _ := givenUp(t, name, lease, func(rw *rwlock.RWMutex, giveUp func()) {
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
