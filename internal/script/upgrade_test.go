package script_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// A rolling upgrade runs the previous version's scripts (testdata/previous,
// as they were before hold ids: the handle's owner id as the field, '@'
// marks) next to this version's on the same lock. The two must still
// exclude each other both ways. A grant from one version to the other's
// waiter is not completed (each names the hold its own way): it stands
// for the grant lease, during which nobody else takes the lock, and then
// lapses, and the waiter takes the free lock at its next attempt.
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
		lapse := func() {
			t.Helper()
			if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= 0 || pttl > grant {
				t.Fatalf("the cross-version grant lives %v, want at most the grant lease %v", pttl, grant)
			}
			rdb.Del(ctx, k.Lock) // its grant lease runs out
		}

		// The previous version holds: the new one is refused, and joins
		// the line.
		if r := old(0, 0, 1); fmt.Sprint(r) != "[1]" {
			t.Fatalf("previous acquire = %v, want 1", r)
		}
		if a := take(t, rdb, k, "new:1", false, time.Minute); a.OK {
			t.Fatal("the new version took a lock the previous one holds")
		}
		// The previous release grants the lock to the new handle's owner
		// id, which no hold of the new version is: still refused.
		if r, ok := oldUnlock(1, 1).([]any); !ok || len(r) < 2 || r[1] != "new" {
			t.Fatalf("previous unlock = %v, want a grant to new", r)
		}
		if a := take(t, rdb, k, "new:1", false, time.Minute); a.OK {
			t.Fatal("the new version completed a grant of the previous one")
		}
		lapse()
		if a := take(t, rdb, k, "new:1", false, time.Minute); !a.OK {
			t.Fatal("the new version could not take the lock once the grant lapsed")
		}

		// The new version holds: the previous one is refused, joins the
		// line, and the new release's grant names no owner of it.
		if r := old(0, time.Minute, 3); r[0] != int64(0) {
			t.Fatalf("previous acquire while the new version holds = %v, want refused", r)
		}
		if u := release(t, rdb, k, "new:1", grant); u.Grantee == "" || u.Grantee == "old" {
			t.Fatalf("new unlock = %+v; want a grant to the previous waiter's place value", u)
		}
		if r := old(0, time.Minute, 4); r[0] != int64(0) {
			t.Fatalf("previous acquire during the cross-version grant = %v, want refused", r)
		}
		lapse()
		if r := old(0, time.Minute, 5); r[0] != int64(1) {
			t.Fatalf("previous acquire once the grant lapsed = %v, want taken", r)
		}
		if r := oldUnlock(1, 5); fmt.Sprint(r) != "0" && fmt.Sprint(r) != "[0]" {
			t.Fatalf("previous unlock = %v, want released", r)
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
