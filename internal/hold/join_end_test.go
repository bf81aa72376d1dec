package hold_test

import (
	"testing"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A read that joins the hold's read level (another goroutine of the
// handle reads already) while that hold ends (lost, or force-unlocked)
// is not taken in the hold that is over. It used to be sent to Redis
// for that hold all the same, under its id: the reply was for a hold that
// had ended, given back, and the read failed with ErrStaleReply, an
// error about a late reply where none came. It is an attempt for the
// handle's next hold, like any read that finds the handle holding
// nothing.
func TestJoinAcrossEndTakesNewHold(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	rw := rwlock.New(srv.NewClient(t), name)
	if err := rw.RLock(ctx); err != nil { // goroutine A
		t.Fatal(err)
	}
	ok, err := hold.RLockAcrossEnd(ctx, rw) // goroutine B
	if !ok || err != nil {
		t.Fatalf("B's read across the end of the hold it joined: %v, %v; want a new hold", ok, err)
	}
	if err := rw.RUnlock(ctx); err != nil { // B
		t.Errorf("B's RUnlock: %v", err)
	}
	_ = rw.RUnlock(ctx) // A's: its hold was lost
	if ok, err := rw.TryLock(ctx); !ok || err != nil {
		t.Fatalf("the handle's write TryLock after both reads: %v, %v (lock hash %v)", ok, err,
			admin.HGetAll(ctx, keyspace.NewNames(name).Lock()).Val())
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
