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
	return script.LockKeys{Lock: n.Lock(), Fence: n.Fence(), Queue: n.Queue(), Places: n.Place(""), Waiter: n.WaiterChannel(""), Channel: n.Channel(), Patience: time.Minute}
}

func TestRLockScripts(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		lease := 10 * time.Second
		acquire := func(owner string, holds int64) script.Acquired {
			t.Helper()
			res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: owner, Lease: lease, Fencing: true, Holds: holds, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		unlock := func(owner string, expect int64) int64 {
			t.Helper()
			u, err := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: owner, Lease: lease, Sharded: false, Expect: expect, GrantLease: time.Second, Mark: 0}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return u.Holds
		}

		first := acquire("a", 0)
		if !first.OK || first.Holds != 1 || first.Token == 0 {
			t.Fatalf("first acquire = %+v", first)
		}
		if again := acquire("a", 0); !again.OK || again.Holds != 1 || again.Token != first.Token {
			t.Fatalf("retried first acquire = %+v, want no new hold and the same token", again)
		}
		if other := acquire("b", 0); other.OK || other.Wait <= 0 || other.Wait > lease {
			t.Fatalf("other owner = %+v, want refused with the holder's remaining lease", other)
		}
		if n := unlock("b", 0); n != script.UnlockNotHeld {
			t.Fatalf("unlock by non-holder = %d", n)
		}
		if n := unlock("a", 2); n != script.UnlockMismatch {
			t.Fatalf("unlock expecting the wrong count = %d", n)
		}
		if ok, _ := script.ReentrantRenew(ctx, rdb, k.Lock, "a", lease).Result(); !ok {
			t.Fatal("renew by the holder failed")
		}
		if c := script.ReentrantRenew(ctx, rdb, k.Lock, "b", lease); c.Val() || c.Holder() != (script.Holder{Owner: "a"}) {
			t.Fatalf("renew by a non-holder = %v, found %+v holding; want false, found a", c.Val(), c.Holder())
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
		force := func(receipt string, aim []any) int64 {
			t.Helper()
			n, err := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+receipt, time.Second, false, aim).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		aimed := script.Aim(rdb.HGetAll(ctx, k.Lock).Val())
		if n := force("stale", script.Aim(nil)); n != script.ForceMoved {
			t.Fatalf("force unlock aimed at a free lock, of a held one = %d, want ForceMoved", n)
		}
		if n := force(t.Name(), aimed); n != script.ForceDeleted {
			t.Fatalf("force unlock = %d, want ForceDeleted", n)
		}
		if n := force(t.Name(), aimed); n != script.ForceDeleted {
			t.Fatalf("a repeated force unlock = %d, did not report what the first did", n)
		}
		if n := force("other", nil); n != script.ForceNone {
			t.Fatalf("force unlock of a free lock = %d, want ForceNone", n)
		}
		// A late copy, its receipt gone, aimed at b's hold: b took the
		// lock again since, with a later mark, and keeps it.
		if _, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "b", Lease: lease, Fencing: true, Holds: 0, Seq: 2, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil {
			t.Fatal(err)
		}
		if n := force("late", aimed); n != script.ForceMoved || rdb.HExists(ctx, k.Lock, "b").Val() != true {
			t.Fatalf("a late force unlock aimed at an earlier hold = %d; the later hold kept: %v",
				n, rdb.HExists(ctx, k.Lock, "b").Val())
		}
		force("end", script.Aim(rdb.HGetAll(ctx, k.Lock).Val()))
	})
}

func TestRLockScriptsWrongType(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		rdb.Set(ctx, k.Lock, "mine", 0)
		_, errAcquire := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "a", Lease: time.Second, Fencing: false, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result()
		_, errUnlock := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "a", Lease: time.Second, Sharded: false, Expect: 0, GrantLease: time.Second, Mark: 0}).Result()
		_, errRenew := script.ReentrantRenew(ctx, rdb, k.Lock, "a", time.Second).Result()
		_, errForce := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+t.Name(), time.Second, false, nil).Result()
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

// A release grants the lock to the waiter in line, for the grant lease; a
// resend of that release changes nothing, and the grantee's acquire
// reports the grant as its hold and sets the full lease.
func TestRLockGrant(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		const lease, grant = 10 * time.Second, 2 * time.Second
		first, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "a", Lease: lease, Fencing: true, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result()
		if err != nil || !first.OK || first.Token == 0 {
			t.Fatalf("a's acquire = %+v, %v; want a token", first, err)
		}
		// c stands first in line but dies (its place expires): the
		// grant skips it.
		if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "c", Lease: lease, Fencing: true, Holds: 0, Patience: time.Minute, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || res.OK || res.Mark != 1 {
			t.Fatalf("c's waiting acquire = %+v, %v; want a place in line, mark 1", res, err)
		}
		res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "b", Lease: lease, Fencing: true, Holds: 0, Patience: time.Minute, Seq: 7, Deadline: redistest.InTime(), Placed: true}).Result()
		if err != nil || res.OK || res.Mark != 7 {
			t.Fatalf("b's waiting acquire = %+v, %v; want a place in line, mark 7", res, err)
		}
		// A refresh keeps b's place (the line does not grow) and its
		// new mark.
		res, err = script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "b", Lease: lease, Fencing: true, Holds: 0, Patience: time.Minute, Seq: 8, Deadline: redistest.InTime(), Placed: true}).Result()
		if err != nil || res.OK || res.Mark != 8 {
			t.Fatalf("b's second waiting acquire = %+v, %v; want mark 8", res, err)
		}
		if line := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(line) != 2 || line[0] != "c" || line[1] != "b" {
			t.Fatalf("line %v, want [c b]", line)
		}
		rdb.Del(ctx, k.Places+"c")
		u, err := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "a", Lease: lease, Sharded: false, Expect: 1, GrantLease: grant, Mark: 0}).Result()
		if err != nil || u.Holds != 0 || u.Grantee != "b" || u.Token <= first.Token || u.Mark != 8 {
			t.Fatalf("a's unlock = %+v, %v; want released and granted to b with a token above %d, mark 8", u, err, first.Token)
		}
		granted := u.Token
		u, err = script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "a", Lease: lease, Sharded: false, Expect: 1, GrantLease: grant, Mark: 0}).Result() // a resend
		if err != nil || u.Holds != script.UnlockNotHeld || u.Grantee != "" {
			t.Fatalf("resent unlock = %+v, %v; want not held, no grant", u, err)
		}
		if v := redistest.Holders(ctx, rdb, k.Lock); len(v) != 1 || v["b"] != "1" {
			t.Fatalf("lock hash after the grant and its resend = %v, want b alone with one level", v)
		}
		if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= 0 || pttl > grant {
			t.Fatalf("grant lease %v, want at most %v", pttl, grant)
		}
		if n := rdb.Exists(ctx, k.Queue, k.Places+"b", k.Places+"c").Val(); n != 0 {
			t.Fatalf("%d line keys left after the grant", n)
		}
		got, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "b", Lease: lease, Fencing: true, Holds: 0, Seq: 9, Deadline: redistest.InTime(), Placed: true}).Result() // b's next attempt after mark 8
		if err != nil || !got.OK || got.Holds != 1 || got.Token != granted {
			t.Fatalf("b's acquire after the grant = %+v, %v; want its one level and the grant's token %d", got, err, granted)
		}
		// Had b used that hold and given it up as lost (Anew), its next
		// attempt adopts it with a new token; a resend of that attempt
		// reports the same one.
		adopt := script.TakeArgs{Owner: "b", Lease: lease, Fencing: true, Seq: 10, Deadline: redistest.InTime(), Anew: true}
		adopted, err := script.ReentrantTake(ctx, rdb, k, adopt).Result()
		if err != nil || !adopted.OK || adopted.Holds != 1 || adopted.Token <= granted {
			t.Fatalf("b's acquire after giving its hold up = %+v, %v; want its one level and a token above %d", adopted, err, granted)
		}
		if resent, err := script.ReentrantTake(ctx, rdb, k, adopt).Result(); err != nil || !resent.OK || resent.Token != adopted.Token {
			t.Fatalf("a resend of that acquire = %+v, %v; want the same hold and token %d", resent, err, adopted.Token)
		}
		if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= grant {
			t.Fatalf("lease after b's acquire %v, want the full lease", pttl)
		}
	})
}

// A grant takes a fencing token only for a waiter that asked for one,
// whether or not the name has a fencing counter already.
func TestRLockGrantTokenPerWaiter(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		const lease = 10 * time.Second
		first, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "a", Lease: lease, Fencing: true, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result()
		if err != nil || !first.OK || first.Token == 0 {
			t.Fatalf("a's acquire = %+v, %v; want a token", first, err)
		}
		for i, w := range []struct {
			owner   string
			fencing bool
		}{{"plain", false}, {"fenced", true}} {
			if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: w.owner, Lease: lease, Fencing: w.fencing, Holds: 0, Patience: time.Minute, Seq: uint64(i + 1), Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || res.OK {
				t.Fatalf("%s's waiting acquire = %+v, %v", w.owner, res, err)
			}
		}
		u, err := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "a", Lease: lease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
		if err != nil || u.Grantee != "plain" || u.Token != 0 {
			t.Fatalf("a's unlock = %+v, %v; want a grant to plain without a token", u, err)
		}
		u, err = script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "plain", Lease: lease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
		if err != nil || u.Grantee != "fenced" || u.Token <= first.Token {
			t.Fatalf("plain's unlock = %+v, %v; want a grant to fenced with a token above %d", u, err, first.Token)
		}
	})
}

// A release never grants the lock to its own owner: a place of the owner
// left in line (a Lock whose leave failed, then a TryLock that took the
// lock) is dropped, and the next waiter is granted the lock.
func TestRLockGrantSkipsOwnPlace(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		const lease = 10 * time.Second
		if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "x", Lease: lease, Fencing: false, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || !res.OK {
			t.Fatalf("x's acquire = %+v, %v", res, err)
		}
		if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "a", Lease: lease, Fencing: false, Holds: 0, Patience: time.Minute, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || res.OK {
			t.Fatalf("a's waiting acquire = %+v, %v", res, err)
		}
		rdb.Del(ctx, k.Lock) // x's lease ran out; a's Lock gave up, its leave lost
		if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "a", Lease: lease, Fencing: false, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || !res.OK {
			t.Fatalf("a's TryLock = %+v, %v", res, err)
		}
		if res, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{Owner: "c", Lease: lease, Fencing: false, Holds: 0, Patience: time.Minute, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil || res.OK {
			t.Fatalf("c's waiting acquire = %+v, %v", res, err)
		}
		u, err := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{Owner: "a", Lease: lease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
		if err != nil || u.Grantee != "c" {
			t.Fatalf("a's unlock = %+v, %v; want a grant to c", u, err)
		}
		if n := rdb.Exists(ctx, k.Queue, k.Places+"a").Val(); n != 0 {
			t.Fatalf("%d of a's line keys left", n)
		}
	})
}
