package faulttest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// tryLocker is a second handle of a lock, which must be refused while the
// first holds it.
type tryLocker interface {
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
}

// takes reports whether a TryLock of l gets the lock now, and gives back
// what it took.
func takes(ctx context.Context, l tryLocker) (bool, error) {
	took, err := l.TryLock(ctx)
	if took {
		_ = l.Unlock(ctx)
	}
	return took, err
}

// lateGiveBackRows lists, per side of a lock, how to make it, the scripts
// that acquire and release it, and a rival the hold excludes (for a
// reader, a writer).
var lateGiveBackRows = []struct {
	name             string
	handle           newHandle
	acquire, release string
	rival            func(rdb redis.UniversalClient, name string) tryLocker
}{
	{"rlock", newRlock, "rlock_acquire.lua", "rlock_unlock.lua",
		func(rdb redis.UniversalClient, name string) tryLocker { return rlock.New(rdb, name) }},
	{"fairlock", newFairlock, "fairlock_acquire.lua", "fairlock_unlock.lua",
		func(rdb redis.UniversalClient, name string) tryLocker { return fairlock.New(rdb, name) }},
	{"rwlock_writer", newWriter, "rwlock_writelock.lua", "rwlock_writeunlock.lua",
		func(rdb redis.UniversalClient, name string) tryLocker { return rwlock.New(rdb, name) }},
	{"rwlock_reader", newReader, "rwlock_readlock.lua", "rwlock_readunlock.lua",
		func(rdb redis.UniversalClient, name string) tryLocker { return rwlock.New(rdb, name) }},
}

// TestLateGiveBack: a Lock whose first attempt's reply is lost gives that
// attempt back, but the give-back never reaches Redis in time; Lock tries
// again under a new hold id. When Redis then runs the give-back (late, as
// after a stall), it releases the first attempt's level, named by its own
// id, and never the hold Lock reports as taken.
func TestLateGiveBack(t *testing.T) {
	// Every script loaded: a give-back refused with NOSCRIPT when
	// delivered would have run nothing, and the row would pass without
	// testing anything.
	direct, proxy, via := redistest.ProxiedServer(t)
	for _, row := range lateGiveBackRows {
		t.Run(row.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			l := row.handle(via, name)
			held := proxy.Hold(scriptOn(t, row.release, name))
			dropped := proxy.DropReply(scriptOn(t, row.acquire, name))
			lctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := l.lock(lctx); err != nil {
				t.Fatalf("Lock with a lost reply and a held give-back: %v", err)
			}
			t.Cleanup(func() { // after a failure below; a no-op otherwise
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = l.unlock(ctx)
			})
			mustDropped(t, dropped)
			if !redistest.Closed(held.Caught()) {
				t.Fatal("the give-back was not held: the fault was not injected")
			}
			ctx := t.Context()
			if n := l.levels(ctx, direct); n != 1 {
				t.Fatalf("Lock left %d levels in Redis before the give-back ran, want 1", n)
			}

			reply, err := held.Deliver(ctx)
			if err != nil || strings.HasPrefix(reply, "-") {
				t.Fatalf("the late give-back did not run: %q, %v", reply, err)
			}
			n := l.levels(ctx, direct)
			took, err := takes(ctx, row.rival(direct, name))
			if n != 1 || took || err != nil {
				t.Fatalf("the give-back Redis ran late (reply %q) released the hold Lock reported: "+
					"%d levels in Redis (want 1), another handle's TryLock = %v, %v (want false, nil)",
					reply, n, took, err)
			}
			if err := l.unlock(ctx); err != nil {
				t.Fatal(err)
			}
			leftovers(t, direct, name)
		})
	}
}

// TestOwedGiveBack: a write TryLock whose reply is lost, and whose
// give-back never reaches Redis, leaves a write level in Redis. The
// handle's next attempt, a plain RLock, must give it back first: if it
// found the level, it would report it and the handle would keep a write
// level that no Unlock releases and the watchdog renews.
func TestOwedGiveBack(t *testing.T) {
	direct, proxy, via := redistest.ProxiedServer(t)
	name := redistest.UniqueName(t)
	rw := rwlock.New(via, name)
	ctx := t.Context()

	held := proxy.Hold(scriptOn(t, "rwlock_writeunlock.lua", name)) // never delivered
	dropped := proxy.DropReply(scriptOn(t, "rwlock_writelock.lua", name))
	if ok, err := rw.TryLock(ctx); ok || err == nil {
		t.Fatalf("TryLock with a lost reply = %v, %v; want an error", ok, err)
	}
	mustDropped(t, dropped)
	if !redistest.Closed(held.Caught()) {
		t.Fatal("the give-back was not held: the fault was not injected")
	}
	if n := rwLevels(name, "w:")(ctx, direct); n != 1 {
		t.Fatalf("%d write levels in Redis after the lost give-back, want the attempt's 1", n)
	}

	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if w := rwLevels(name, "w:")(ctx, direct); w != 0 {
		t.Fatalf("RLock left the write level the give-back owed in Redis (%d)", w)
	}
	if err := rw.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(rw.Done()) {
		t.Fatal("the hold lives on after RUnlock: the handle kept the write level")
	}
	leftovers(t, direct, name)
}
