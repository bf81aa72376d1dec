package rwlock_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A downgrade (RLock with Do's write ctx) sent while the write level is
// already gone from Redis (its lease ran out before the watchdog noticed,
// or another handle force-unlocked it): the read script finds the lock
// free and takes r:<hold id> afresh. That reply lacks the hold's write
// level: the hold is lost, the downgrade fails and gives the read level
// back by the id. It used to begin a new hold under the same id that no
// call counted or could release, renewed by the watchdog for as long as
// the process lived, with every writer shut out (found by a review).
func TestDowngradeAfterWriteGoneLeavesNothingMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rw := rwlock.New(rdb, "orphan")
	other := rwlock.New(rdb, "orphan")
	err := rw.Do(ctx, func(fctx context.Context) error {
		// The write level is gone from Redis (lease ran out unseen, or a
		// ForceUnlock of another handle); the watchdog has not noticed.
		if err := rdb.Del(ctx, lockKey("orphan")).Err(); err != nil {
			t.Fatal(err)
		}
		return rw.RLock(fctx) // a downgrade
	})
	t.Logf("Do = %v", err)
	perclient.AwaitTidied(ctx)

	if err == nil {
		t.Fatal("a downgrade of a hold whose write level was gone succeeded")
	}
	if !redistest.Closed(rw.Done()) {
		t.Fatal("Done open after the hold was found lost")
	}
	ok, terr := other.TryLock(ctx)
	if terr != nil || !ok {
		t.Fatalf("another handle's TryLock = %v, %v; want the lock (fields %v)", ok, terr, rdb.HKeys(ctx, lockKey("orphan")).Val())
	}
	mustUnlock(t, other)
	own, oerr := rw.TryLock(ctx)
	if oerr != nil || !own {
		t.Fatalf("the handle's own TryLock = %v, %v; want the lock", own, oerr)
	}
	mustUnlock(t, rw)
}
