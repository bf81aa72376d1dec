package script_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// tiers runs f on miniredis and on a real redis-server: the scripts must
// behave the same on both.
func tiers(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) {
		_, rdb := redistest.Mini(t)
		f(t, rdb)
	})
	t.Run("redis-server", func(t *testing.T) {
		f(t, redistest.SharedServer(t).NewClient(t))
	})
}

func lockKeys(name string) script.LockKeys {
	n := internal.NewNames(name)
	return script.LockKeys{Lock: n.Lock(), Fence: n.Fence(), Channel: n.Channel()}
}

func TestRLockScripts(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		lease := 10 * time.Second
		acquire := func(owner string, holds int64) script.Acquired {
			t.Helper()
			res, err := script.ReentrantAcquire(ctx, rdb, k, owner, lease, true, holds).Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		unlock := func(owner string, expect int64) int64 {
			t.Helper()
			n, err := script.ReentrantUnlock(ctx, rdb, k, owner, lease, false, expect).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n
		}

		first := acquire("a", 0)
		if !first.OK || first.Holds != 1 || first.Token == 0 {
			t.Fatalf("first acquire = %+v", first)
		}
		if again := acquire("a", 0); !again.OK || again.Holds != 1 || again.Token != first.Token {
			t.Fatalf("retried first acquire = %+v, want no new hold and the same token", again)
		}
		if re := acquire("a", 1); !re.OK || re.Holds != 2 || re.Token != 0 {
			t.Fatalf("re-entry = %+v", re)
		}
		if other := acquire("b", 0); other.OK || other.Wait <= 0 || other.Wait > lease {
			t.Fatalf("other owner = %+v, want refused with the holder's remaining lease", other)
		}
		if n := unlock("b", 0); n != script.UnlockNotHeld {
			t.Fatalf("unlock by non-holder = %d", n)
		}
		if n := unlock("a", 1); n != script.UnlockMismatch {
			t.Fatalf("unlock expecting the wrong count = %d", n)
		}
		if n := unlock("a", 2); n != 1 {
			t.Fatalf("unlock = %d, want 1 left", n)
		}
		if ok, _ := script.ReentrantRenew(ctx, rdb, k.Lock, "a", lease).Result(); !ok {
			t.Fatal("renew by the holder failed")
		}
		if ok, _ := script.ReentrantRenew(ctx, rdb, k.Lock, "b", lease).Result(); ok {
			t.Fatal("renew by a non-holder succeeded")
		}
		if n := unlock("a", 1); n != 0 {
			t.Fatalf("last unlock = %d, want 0", n)
		}
		if rdb.Exists(ctx, k.Lock).Val() != 0 {
			t.Fatal("lock key left after the last unlock")
		}
		second := acquire("b", 0)
		if second.Token <= first.Token {
			t.Fatalf("token %d after %d: not increasing", second.Token, first.Token)
		}
		if ok, _ := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+t.Name(), time.Second, false).Result(); !ok {
			t.Fatal("force unlock found no lock")
		}
		if ok, _ := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+t.Name(), time.Second, false).Result(); !ok {
			t.Fatal("a repeated force unlock did not report what the first did")
		}
		if ok, _ := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:other", time.Second, false).Result(); ok {
			t.Fatal("force unlock of a free lock reported a deletion")
		}
	})
}

func TestRLockScriptsWrongType(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		rdb.Set(ctx, k.Lock, "mine", 0)
		_, errAcquire := script.ReentrantAcquire(ctx, rdb, k, "a", time.Second, false, 0).Result()
		_, errUnlock := script.ReentrantUnlock(ctx, rdb, k, "a", time.Second, false, 0).Result()
		_, errRenew := script.ReentrantRenew(ctx, rdb, k.Lock, "a", time.Second).Result()
		_, errForce := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+t.Name(), time.Second, false).Result()
		for op, err := range map[string]error{"acquire": errAcquire, "unlock": errUnlock, "renew": errRenew, "force unlock": errForce} {
			if !internal.IsWrongType(err) {
				t.Errorf("%s on a string key: %v, want WRONGTYPE", op, err)
			}
		}
		if v := rdb.Get(ctx, k.Lock).Val(); v != "mine" {
			t.Fatalf("string key changed to %q", v)
		}
	})
}

// The cheap retry of a refused waiter is refused after PTTL alone, and
// takes a free lock like a first acquisition.
func TestRLockAcquireAgain(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		lease := 10 * time.Second
		if res, err := script.ReentrantAcquire(ctx, rdb, k, "a", lease, false, 0).Result(); err != nil || !res.OK {
			t.Fatalf("a's acquire = %+v, %v", res, err)
		}
		res, err := script.ReentrantAcquireAgain(ctx, rdb, k, "b", lease, false).Result()
		if err != nil || res.OK || res.Wait <= 0 || res.Wait > lease {
			t.Fatalf("b's retry on a held lock = %+v, %v; want refused with the remaining lease", res, err)
		}
		if n, _ := rdb.HLen(ctx, k.Lock).Result(); n != 1 {
			t.Fatalf("a refused retry changed the lock hash: %d fields", n)
		}
		if n, err := script.ReentrantUnlock(ctx, rdb, k, "a", lease, false, 1).Result(); err != nil || n != 0 {
			t.Fatalf("a's unlock = %d, %v", n, err)
		}
		res, err = script.ReentrantAcquireAgain(ctx, rdb, k, "b", lease, true).Result()
		if err != nil || !res.OK || res.Holds != 1 || res.Token == 0 {
			t.Fatalf("b's retry on a free lock = %+v, %v; want a first acquisition with a token", res, err)
		}
		if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= 0 || pttl > lease {
			t.Fatalf("lease after b's retry: %v", pttl)
		}
	})
}

// A name taken over by a key without expiry during a wait is reported by
// the cheap retry too: only a lock hash with a lease is refused cheaply.
func TestRLockAcquireAgainWrongType(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		k := lockKeys(redistest.UniqueName(t))
		rdb.Set(t.Context(), k.Lock, "mine", 0)
		_, err := script.ReentrantAcquireAgain(t.Context(), rdb, k, "b", time.Second, false).Result()
		if !internal.IsWrongType(err) {
			t.Fatalf("cheap retry on a string key: %v, want WRONGTYPE", err)
		}
	})
}
