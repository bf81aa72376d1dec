package hold_test

import (
	"testing"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// ForceUnlock of a handle while a release of another holder has granted
// the lock to the handle's parked wait, whose grant message (or the
// waiter's goroutine) comes after the force: the force read the grant
// (the wait's hold id is the lock's field), deleted it, and found no
// current hold to end, and the wait then claimed the grant it read
// before, without a round trip:
// the handle holds a lock that Redis no longer has, and another handle
// can take it, until the watchdog's next renewal finds it gone. The same
// race as TestForceUnlockEndsHoldTakenMidLock (an attempt's reply after
// the force), for a grant: the force retires the wait's id, and nothing
// begins under a retired id.
func TestForceUnlockEndsGrantClaimedAfter(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	lock := keyspace.NewNames(name).Lock()
	m := rlock.New(srv.NewClient(t), name)
	other := rlock.New(srv.NewClient(t), name)

	// The grant a release of another holder made to the handle's wait
	// (rlock_unlock: the grantee's hold id is the holder, for the grant
	// lease).
	id := hold.WaitID(m)
	if err := admin.HSet(ctx, lock, id, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.PExpire(ctx, lock, hold.GrantLease).Err(); err != nil {
		t.Fatal(err)
	}
	ok, err := m.ForceUnlock(ctx)
	if err != nil || !ok {
		t.Fatalf("ForceUnlock = %v, %v; want the grant deleted", ok, err)
	}
	// The grant's message, read before the force, reaches the wait now.
	claimed, err := hold.ClaimGrant(ctx, m, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = m.ForceUnlock(ctx) })
	if !claimed {
		return // completed by an attempt instead: Redis decides
	}
	if n := admin.Exists(ctx, lock).Val(); n == 0 && !isClosed(m.Done()) {
		took, _ := other.TryLock(ctx)
		t.Errorf("after ForceUnlock deleted the grant, the handle's wait claimed it: the handle holds "+
			"(Done open) a lock Redis does not have; another handle's TryLock = %v", took)
		if took {
			_ = other.Unlock(ctx)
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
