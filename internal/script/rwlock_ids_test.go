package script_test

import (
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// rwHolds drives the rwlock scripts on one lock for hold ids.
type rwHolds struct {
	t   *testing.T
	rdb *redis.Client
	n   keyspace.Names
	k   script.RWKeys
}

func newRWHolds(t *testing.T, rdb *redis.Client) rwHolds {
	n := keyspace.NewNames(redistest.UniqueName(t))
	return rwHolds{t, rdb, n, n.RWKeys()}
}

func (h rwHolds) read(id string, tag uint64) script.RWHolds {
	h.t.Helper()
	res, err := script.RWReadTake(h.t.Context(), h.rdb, h.k, script.RWReadArgs{
		ID: id, Lease: time.Minute, Patience: time.Second, Deadline: redistest.InTime(), Tag: tag,
	}).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h rwHolds) write(id string, fencing bool) script.RWHolds {
	h.t.Helper()
	res, err := script.RWWriteTake(h.t.Context(), h.rdb, h.k, script.RWWriteArgs{
		ID: id, Lease: time.Minute, Fencing: fencing, Patience: time.Second, Deadline: redistest.InTime(),
	}).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h rwHolds) readUnlock(id string, tag uint64) script.RWHolds {
	h.t.Helper()
	res, err := script.RWReadUnlock(h.t.Context(), h.rdb, h.k, script.ReleaseArgs{ID: id, Tag: tag}).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h rwHolds) writeUnlock(id string) script.RWHolds {
	h.t.Helper()
	res, err := script.RWWriteUnlock(h.t.Context(), h.rdb, h.k, script.ReleaseArgs{ID: id}).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h rwHolds) state() map[string]string {
	h.t.Helper()
	return snapshot(h.t, h.rdb, h.n)
}

// A release by the id of a hold the handle has ended, run after the
// handle's next hold began, finds nothing of that id and changes nothing,
// in either mode: ids are never reused.
func TestRWLockOldIDRelease(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		h := newRWHolds(t, rdb)
		h.write("a:1", false)
		h.read("a:1", 1) // a downgrade, so that the old id had both modes
		h.writeUnlock("a:1")
		h.readUnlock("a:1", 1)
		if r := h.write("a:2", false); !r.OK {
			t.Fatalf("the handle's next hold = %+v, want the write lock", r)
		}
		h.read("a:2", 1)
		before := h.state()
		if r := h.writeUnlock("a:1"); !r.NotHeld {
			t.Fatalf("write release by the old id = %+v, want not held", r)
		}
		if r := h.readUnlock("a:1", 1); !r.NotHeld {
			t.Fatalf("read release by the old id = %+v, want not held", r)
		}
		if after := h.state(); !maps.Equal(before, after) {
			t.Fatalf("releases by the old id changed %v into %v", before, after)
		}
	})
}

// A first write acquisition sent again by the same id (its reply lost)
// reports the hold and its token, and takes nothing more: the release of
// the one write level frees the lock.
func TestRWLockWriteResend(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		h := newRWHolds(t, rdb)
		first := h.write("a:1", true)
		if !first.OK || first.Writes != 1 || first.Token == 0 {
			t.Fatalf("first write = %+v, want the write lock with a token", first)
		}
		rdb.PExpire(t.Context(), h.k.Lock, time.Second) // as if the lease had run on
		again := h.write("a:1", true)
		if again != first {
			t.Fatalf("resent write = %+v, want %+v", again, first)
		}
		if ttl := rdb.PTTL(t.Context(), h.k.Lock).Val(); ttl <= time.Second {
			t.Fatalf("the resend left the lease at %v, want it re-armed", ttl)
		}
		if r := h.writeUnlock("a:1"); !r.OK || r.Reads != 0 {
			t.Fatalf("release = %+v, want the lock freed", r)
		}
		if n := rdb.Exists(t.Context(), h.k.Lock).Val(); n != 0 {
			t.Fatalf("the lock is left after the release of the one write level: %v", h.state())
		}
	})
}

// A read level taken by the id of the write hold is a downgrade: let in
// at once, even past another writer's announcement, and kept when the
// write level goes. Further read levels of the hold add up, and a read
// release at a level the hold does not have changes nothing.
func TestRWLockDowngradeByID(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		h := newRWHolds(t, rdb)
		h.write("a:1", true)
		rdb.ZAdd(ctx, h.k.Writers, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "b"})
		if r := h.read("b:1", 1); r.OK {
			t.Fatalf("another handle's read under the write hold = %+v, want refused", r)
		}
		if r := h.read("a:1", 1); !r.OK || r.Reads != 1 || r.Writes != 1 {
			t.Fatalf("downgrade = %+v, want one level of each mode", r)
		}
		if r := h.read("a:1", 1); !r.OK || r.Reads != 1 || r.Writes != 1 {
			t.Fatalf("a further read = %+v, want the hold's one read level (readers are counted in the process)", r)
		}
		if r := h.writeUnlock("a:1"); !r.OK || r.Reads != 1 || r.Writes != 0 {
			t.Fatalf("write release = %+v, want the read level left", r)
		}
		if f := rdb.HGetAll(ctx, h.k.Lock).Val(); f["mode"] != "read" || f["@token"] != "" || f["r:a:1"] != "1" {
			t.Fatalf("after the write release the hash is %v, want a read hold of one level and no token", f)
		}
		if r := h.readUnlock("a:1", 1); !r.OK || r.Reads != 0 {
			t.Fatalf("read release = %+v, want none left", r)
		}
		if r := h.readUnlock("a:1", 1); !r.NotHeld {
			t.Fatalf("the read release again = %+v, want not held: the id names the hold's one read level", r)
		}
		if n := rdb.Exists(ctx, h.k.Lock, h.k.ReaderKey("a:1")).Val(); n != 0 {
			t.Fatalf("%d keys left after the hold's last level", n)
		}
	})
}

// A hold that takes its read level again (a downgrade, released, then
// taken again) takes it under the new attempt's tag: a late copy of the
// first release, or of the first attempt, changes nothing; an attempt
// with a higher tag takes over a level an earlier attempt's late copy
// left, which a give-back of that attempt then leaves alone.
func TestRWLockReadTakenAgainByTag(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		h := newRWHolds(t, rdb)
		h.write("a:1", false)
		h.read("a:1", 5)
		if r := h.readUnlock("a:1", 5); !r.OK || r.Writes != 1 {
			t.Fatalf("read release = %+v, want the write level left", r)
		}
		if r := h.read("a:1", 7); !r.OK || r.Reads != 1 {
			t.Fatalf("the read level taken again = %+v", r)
		}
		before := h.state()
		if r := h.readUnlock("a:1", 5); !r.NotHeld {
			t.Fatalf("a late copy of the first read release = %+v, want not held", r)
		}
		if r := h.read("a:1", 5); r.OK {
			t.Fatalf("a late copy of the first read attempt = %+v, want refused", r)
		}
		if after := h.state(); !maps.Equal(before, after) || rdb.HGet(t.Context(), h.k.Lock, "r:a:1").Val() != "7" {
			t.Fatalf("late copies changed %v into %v", before, after)
		}
		if r := h.read("a:1", 9); !r.OK || r.Reads != 1 {
			t.Fatalf("a later attempt over the level = %+v, want it taken over", r)
		}
		if r := h.readUnlock("a:1", 7); !r.NotHeld {
			t.Fatalf("a give-back of the attempt taken over = %+v, want not held", r)
		}
		if r := h.readUnlock("a:1", 9); !r.OK || r.Reads != 0 || r.Writes != 1 {
			t.Fatalf("read release by the last tag = %+v, want the write level left", r)
		}
	})
}

// A read field of the previous release, r:<owner id> with a count of
// read levels, is another reader's to this release's scripts, which name
// only their own hold ids: a read hold taken and released next to it
// leaves it as it is while its timeout key lives, and a writer waits.
func TestRWLockPreviousReleaseField(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		h := newRWHolds(t, rdb)
		old := "r:web-1:42:0b1c2d3e-5f60-4a7b-8c9d-0e1f2a3b4c5d"
		rdb.HSet(ctx, h.k.Lock, "mode", "read", old, 3)
		rdb.PExpire(ctx, h.k.Lock, time.Minute)
		rdb.Set(ctx, h.k.ReaderKey(old[2:]), 1, time.Minute)
		if r := h.read("a:1", 1); !r.OK {
			t.Fatalf("a read next to the previous release's reader = %+v", r)
		}
		if r := h.readUnlock("a:1", 1); !r.OK || r.Reads != 0 {
			t.Fatalf("its release = %+v", r)
		}
		if r := h.write("a:2", false); r.OK {
			t.Fatalf("a write past the previous release's reader = %+v, want refused", r)
		}
		if v := rdb.HGet(ctx, h.k.Lock, old).Val(); v != "3" {
			t.Fatalf("the previous release's field holds %q, want its count 3", v)
		}
	})
}

// A write attempt by a hold with read levels is an upgrade, refused with
// nothing changed; a hold the handle gave up has another id, and is a
// holder like any other: waited for, not an upgrade, and not renewed by
// the handle's next hold.
func TestRWLockUpgradeAndGivenUp(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		h := newRWHolds(t, rdb)
		h.read("a:1", 1)
		before := h.state()
		if r := h.write("a:1", false); r.OK || !r.Upgrade {
			t.Fatalf("write by the reading hold = %+v, want refused as an upgrade", r)
		}
		if after := h.state(); !maps.Equal(before, after) {
			t.Fatalf("the refused upgrade changed %v into %v", before, after)
		}
		// a:1 given up, standing in Redis: the handle's next hold a:2.
		if r := h.write("a:2", false); r.OK || r.Upgrade {
			t.Fatalf("write by the next hold = %+v, want refused behind the reader", r)
		}
		if r := h.read("a:2", 1); !r.OK || r.Reads != 1 {
			t.Fatalf("read by the next hold = %+v, want a read level of its own", r)
		}
		rdb.PExpire(ctx, h.k.ReaderKey("a:1"), time.Second)
		if ok, err := script.RWRenew(ctx, rdb, h.k, "a:2", time.Minute).Result(); err != nil || !ok {
			t.Fatalf("renewal of a:2 = %v, %v", ok, err)
		}
		if ttl := rdb.PTTL(ctx, h.k.ReaderKey("a:1")).Val(); ttl > time.Second {
			t.Fatalf("a:2's renewal re-armed a:1's read lease to %v", ttl)
		}

		// A write hold given up: its id's level is another writer's.
		h = newRWHolds(t, rdb)
		h.write("a:1", false)
		if r := h.read("a:2", 1); r.OK {
			t.Fatalf("read by the next hold under the write hold given up = %+v, want refused", r)
		}
		if r := h.write("a:2", false); r.OK || r.Upgrade {
			t.Fatalf("write by the next hold = %+v, want refused behind the writer", r)
		}
	})
}

// A force-unlock aims at the hold fields it read, by name: it deletes the
// lock while they are the hash's holds, and changes nothing once another
// hold has come.
func TestRWLockForceUnlockAim(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		h := newRWHolds(t, rdb)
		h.read("a:1", 1)
		h.read("b:1", 1)
		aim := script.Aim(rdb.HGetAll(ctx, h.k.Lock).Val())
		if len(aim) != 2 {
			t.Fatalf("aim %v, want the two read fields", aim)
		}
		h.read("c:1", 1)
		if n, err := script.RWForceUnlock(ctx, rdb, h.k, h.n.Sub("receipt:1"), time.Minute, false, aim).Result(); err != nil || n != script.ForceMoved {
			t.Fatalf("force-unlock aimed before c:1 came = %d, %v; want moved", n, err)
		}
		aim = script.Aim(rdb.HGetAll(ctx, h.k.Lock).Val())
		if n, err := script.RWForceUnlock(ctx, rdb, h.k, h.n.Sub("receipt:2"), time.Minute, false, aim).Result(); err != nil || n != script.ForceDeleted {
			t.Fatalf("force-unlock = %d, %v; want deleted", n, err)
		}
		if n := rdb.Exists(ctx, h.k.Lock, h.k.ReaderKey("a:1"), h.k.ReaderKey("b:1"), h.k.ReaderKey("c:1")).Val(); n != 0 {
			t.Fatalf("%d keys left after the force-unlock", n)
		}
	})
}
