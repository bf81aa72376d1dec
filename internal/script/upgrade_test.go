package script_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// A rolling upgrade runs the previous version's scripts (testdata/previous,
// as they were before re-entry moved into the process and the transfer
// between handles went) next to this version's on the same lock. The two
// must still exclude each other both ways, and the grant in a release of
// either must reach a waiter of the other: the layout (owner field, '@'
// mark, the line and the places) is the same, and only the counting of
// re-entries moved, which each version does for its own holds.
func TestRollingUpgradeRLock(t *testing.T) {
	acquireOld, unlockOld := previous(t, "rlock_acquire"), previous(t, "rlock_unlock")
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		const lease, grant = 10 * time.Second, 2 * time.Second
		// old runs the previous acquire for owner "old": expect is the
		// count it believes it holds, patience > 0 joins the line.
		old := func(expect int64, patience time.Duration, mark int) []any {
			t.Helper()
			res, err := acquireOld.Run(ctx, rdb, []string{k.Lock, k.Queue, k.Places + "old", k.Fence},
				"old", lease.Milliseconds(), "0", expect, patience.Milliseconds(), mark, redistest.InTime(), "p").Result()
			if err != nil {
				t.Fatalf("previous acquire: %v", err)
			}
			if n, ok := res.(int64); ok {
				return []any{n}
			}
			return res.([]any)
		}
		oldUnlock := func(expect int64, mark int) any {
			t.Helper()
			res, err := unlockOld.Run(ctx, rdb, []string{k.Lock, k.Queue, k.Fence, k.Channel},
				"old", lease.Milliseconds(), "0", expect, k.Waiter, grant.Milliseconds(), k.Places, k.Patience.Milliseconds(), mark).Result()
			if err != nil {
				t.Fatalf("previous unlock: %v", err)
			}
			return res
		}
		take := func(owner string, patience time.Duration, seq uint64) script.Acquired {
			t.Helper()
			res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: owner, Lease: lease, Fencing: false, Holds: 0, Patience: patience, Seq: seq, Deadline: redistest.InTime(), Placed: true}).Result()
			if err != nil {
				t.Fatalf("acquire by %s: %v", owner, err)
			}
			return res
		}

		// The previous version holds, re-entered in Redis: the new one is
		// refused, and joins the line.
		if r := old(0, 0, 1); fmt.Sprint(r) != "[1]" {
			t.Fatalf("previous acquire = %v, want 1", r)
		}
		if r := old(1, 0, 2); fmt.Sprint(r[:2]) != "[1 2]" {
			t.Fatalf("previous re-entry = %v, want two levels", r)
		}
		if a := take("new", time.Minute, 1); a.OK {
			t.Fatal("the new version took a lock the previous one holds")
		}
		// The previous release of its last level grants the lock to the
		// new version's waiter, which holds it in the new way: one level.
		if r := oldUnlock(2, 2); fmt.Sprint(r) != "[1]" {
			t.Fatalf("previous unlock of the inner level = %v, want 1 left", r)
		}
		r := oldUnlock(1, 2)
		if got, ok := r.([]any); !ok || len(got) < 2 || got[1] != "new" {
			t.Fatalf("previous last unlock = %v, want a grant to new", r)
		}
		if v := rdb.HGet(ctx, k.Lock, "new").Val(); v != "1" {
			t.Fatalf("the new waiter holds %q levels after the grant, want 1", v)
		}

		// The new version holds: the previous one is refused, joins the
		// line, and the new release grants it the lock.
		if r := old(0, time.Minute, 3); r[0] != int64(0) {
			t.Fatalf("previous acquire while the new version holds = %v, want refused", r)
		}
		u, err := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "new", Lease: lease, Sharded: false, Expect: 1, GrantLease: grant, Mark: 1}).Result()
		if err != nil || u.Grantee != "old" {
			t.Fatalf("new unlock = %+v, %v; want a grant to old", u, err)
		}
		if r := oldUnlock(1, 3); fmt.Sprint(r) != "0" && fmt.Sprint(r) != "[0]" {
			t.Fatalf("previous unlock of its grant = %v, want released", r)
		}
		if n := rdb.Exists(ctx, k.Lock, k.Queue).Val(); n != 0 {
			t.Fatalf("%d keys left after both versions released", n)
		}
	})
}

// previous returns the previous version's script called name.
func previous(t *testing.T, name string) *redis.Script {
	t.Helper()
	src, err := os.ReadFile("testdata/previous/" + name + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	return redis.NewScript(string(src))
}
