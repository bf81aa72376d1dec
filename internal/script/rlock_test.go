package script_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/keyspace"
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
	n := keyspace.NewNames(name)
	return script.LockKeys{Lock: n.Lock(), Fence: n.Fence(), Queue: n.Queue(), Places: n.Place(""), Waiter: n.WaiterChannel(""), Channel: n.Channel(), Patience: time.Minute}
}

// take and release run rlock's acquire and release scripts for hold id,
// fenced, waiting in line when patience is positive.
func take(t *testing.T, rdb *redis.Client, k script.LockKeys, id string, fencing bool, patience time.Duration) script.Acquired {
	t.Helper()
	res, err := script.ReentrantTake(t.Context(), rdb, k, script.TakeArgs{ID: id, Lease: 10 * time.Second, Fencing: fencing, Patience: patience, Deadline: redistest.InTime(), Placed: true}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func release(t *testing.T, rdb *redis.Client, k script.LockKeys, id string, grant time.Duration) script.Unlocked {
	t.Helper()
	u, err := script.ReentrantUnlock(t.Context(), rdb, k, script.ReleaseArgs{ID: id, Lease: 10 * time.Second, GrantLease: grant}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestRLockScripts(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		lease := 10 * time.Second
		first := take(t, rdb, k, "a:1", true, 0)
		if !first.OK || first.Holds != 1 || first.Token == 0 {
			t.Fatalf("first acquire = %+v", first)
		}
		if again := take(t, rdb, k, "a:1", true, 0); !again.OK || again.Holds != 1 || again.Token != first.Token {
			t.Fatalf("resent first acquire = %+v, want the same hold and token", again)
		}
		// The handle's next hold id is another holder to the hold it gave
		// up: it waits.
		if other := take(t, rdb, k, "a:2", true, 0); other.OK || other.Wait <= 0 || other.Wait > lease {
			t.Fatalf("another hold id = %+v, want refused with the holder's remaining lease", other)
		}
		if u := release(t, rdb, k, "a:2", time.Second); u.Holds != script.UnlockNotHeld {
			t.Fatalf("unlock by a non-holder = %+v", u)
		}
		if ok, _ := script.ReentrantRenew(ctx, rdb, k.Lock, "a:1", lease).Result(); !ok {
			t.Fatal("renew by the holder failed")
		}
		c := script.ReentrantRenew(ctx, rdb, k.Lock, "b:1", lease)
		if ok, _ := c.Result(); ok || c.Holder() != (script.Holder{Owner: "a:1"}) {
			t.Fatalf("renew by a non-holder = %v, found %+v holding; want false, found a:1", ok, c.Holder())
		}
		if u := release(t, rdb, k, "a:1", time.Second); u.Holds != 0 {
			t.Fatalf("last unlock = %+v, want 0", u)
		}
		if rdb.Exists(ctx, k.Lock).Val() != 0 {
			t.Fatal("lock key left after the last unlock")
		}
		second := take(t, rdb, k, "a:2", true, 0)
		if second.Token <= first.Token {
			t.Fatalf("token %d after %d: not increasing", second.Token, first.Token)
		}
		// A copy of a:1's release that Redis runs late, after a:2 took
		// the lock, finds no a:1 and leaves a:2's hold alone.
		if u := release(t, rdb, k, "a:1", time.Second); u.Holds != script.UnlockNotHeld || !rdb.HExists(ctx, k.Lock, "a:2").Val() {
			t.Fatalf("a late release of an earlier hold = %+v; the later hold kept: %v", u, rdb.HExists(ctx, k.Lock, "a:2").Val())
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
		// A late copy, its receipt gone, aimed at a:2's hold: the handle
		// took the lock again since, as a:3, and keeps it.
		take(t, rdb, k, "a:3", true, 0)
		if n := force("late", aimed); n != script.ForceMoved || !rdb.HExists(ctx, k.Lock, "a:3").Val() {
			t.Fatalf("a late force unlock aimed at an earlier hold = %d; the later hold kept: %v",
				n, rdb.HExists(ctx, k.Lock, "a:3").Val())
		}
		force("end", script.Aim(rdb.HGetAll(ctx, k.Lock).Val()))
	})
}

func TestRLockScriptsWrongType(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		rdb.Set(ctx, k.Lock, "mine", 0)
		_, errAcquire := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{ID: "a:1", Lease: time.Second, Deadline: redistest.InTime(), Placed: true}).Result()
		_, errUnlock := script.ReentrantUnlock(ctx, rdb, k, script.ReleaseArgs{ID: "a:1", Lease: time.Second, GrantLease: time.Second}).Result()
		_, errRenew := script.ReentrantRenew(ctx, rdb, k.Lock, "a:1", time.Second).Result()
		_, errForce := script.ReentrantForceUnlock(ctx, rdb, k, k.Lock+":force:"+t.Name(), time.Second, false, nil).Result()
		for op, err := range map[string]error{"acquire": errAcquire, "unlock": errUnlock, "renew": errRenew, "force unlock": errForce} {
			if !errs.IsWrongType(err) {
				t.Errorf("%s on a string key: %v, want WRONGTYPE", op, err)
			}
		}
		if v := rdb.Get(ctx, k.Lock).Val(); v != "mine" {
			t.Fatalf("string key changed to %q", v)
		}
	})
}

// A release grants the lock to the hold id the first live place in line
// names, for the grant lease, and says so on the waiter's channel; a
// resend of that release changes nothing, and the grantee's acquire
// reports the grant as its hold and sets the full lease.
func TestRLockGrant(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		const lease, grant = 10 * time.Second, 2 * time.Second
		first := take(t, rdb, k, "a:1", true, 0)
		// c stands first in line but dies (its place expires): the
		// grant skips it.
		if res := take(t, rdb, k, "c:1", true, time.Minute); res.OK {
			t.Fatalf("c's waiting acquire = %+v; want a place in line", res)
		}
		take(t, rdb, k, "b:1", true, time.Minute)
		// A later wait of b's handle keeps b's place (the line does not
		// grow), which now names the new id.
		take(t, rdb, k, "b:2", true, time.Minute)
		if line := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(line) != 2 || line[0] != "c" || line[1] != "b" {
			t.Fatalf("line %v, want [c b]", line)
		}
		if v := rdb.Get(ctx, k.Places+"b").Val(); v != "fb:2#0" {
			t.Fatalf("b's place %q, want fb:2#0", v)
		}
		rdb.Del(ctx, k.Places+"c")
		sub := rdb.Subscribe(ctx, k.Waiter+"b")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		u := release(t, rdb, k, "a:1", grant)
		if u.Holds != 0 || u.Grantee != "b:2" || u.Token <= first.Token {
			t.Fatalf("a's unlock = %+v; want released and granted to b:2 with a token above %d", u, first.Token)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if g, ok := script.ParseGrant(msg.Payload); err != nil || !ok || g != (script.Grant{Token: u.Token, ID: "b:2", Seq: u.Seq}) {
			t.Fatalf("grant message %q, %v; want the grant to b:2 with token %d", msg.Payload, err, u.Token)
		}
		if u := release(t, rdb, k, "a:1", grant); u.Holds != script.UnlockNotHeld || u.Grantee != "" {
			t.Fatalf("resent unlock = %+v; want not held, no grant", u)
		}
		if v := redistest.Holders(ctx, rdb, k.Lock); len(v) != 1 || v["b:2"] != "1" {
			t.Fatalf("lock hash after the grant and its resend = %v, want b:2 alone", v)
		}
		if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= 0 || pttl > grant {
			t.Fatalf("grant lease %v, want at most %v", pttl, grant)
		}
		if n := rdb.Exists(ctx, k.Queue, k.Places+"b", k.Places+"c").Val(); n != 0 {
			t.Fatalf("%d line keys left after the grant", n)
		}
		if got := take(t, rdb, k, "b:2", true, 0); !got.OK || got.Holds != 1 || got.Token != u.Token {
			t.Fatalf("b's acquire after the grant = %+v; want its hold and the grant's token %d", got, u.Token)
		}
		if pttl := rdb.PTTL(ctx, k.Lock).Val(); pttl <= grant {
			t.Fatalf("lease after b's acquire %v, want the full lease", pttl)
		}
	})
}

// A leave names the hold id of the wait that gives up: a copy that runs
// late, after a later wait of the same handle took the place, leaves that
// place alone; a grant to the id is reported, not released. (The handle's
// host name starts with "f", as a fenced place's value does.)
func TestRLockLeave(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		take(t, rdb, k, "x:1", false, 0)
		take(t, rdb, k, "fa:1", false, time.Minute)
		take(t, rdb, k, "fa:2", false, time.Minute)
		if n, err := script.ReentrantLeave(ctx, rdb, k, "fa:1").Result(); err != nil || n != script.LeftNothing || rdb.Exists(ctx, k.Places+"fa").Val() != 1 {
			t.Fatalf("a late leave of fa:1 = %d, %v; want nothing changed", n, err)
		}
		if n, err := script.ReentrantLeave(ctx, rdb, k, "fa:2").Result(); err != nil || n != script.LeftLine || rdb.Exists(ctx, k.Places+"fa", k.Queue).Val() != 0 {
			t.Fatalf("leave of fa:2 = %d, %v; want out of line", n, err)
		}
		take(t, rdb, k, "fa:3", false, time.Minute)
		if u := release(t, rdb, k, "x:1", time.Second); u.Grantee != "fa:3" {
			t.Fatalf("x's unlock = %+v, want a grant to fa:3", u)
		}
		if n, err := script.ReentrantLeave(ctx, rdb, k, "fa:3").Result(); err != nil || n != script.LeftGranted || !rdb.HExists(ctx, k.Lock, "fa:3").Val() {
			t.Fatalf("leave of granted fa:3 = %d, %v; want the grant reported and kept", n, err)
		}
	})
}

// A grant takes a fencing token only for a waiter that asked for one,
// whether or not the name has a fencing counter already, and whatever its
// host name starts with.
func TestRLockGrantTokenPerWaiter(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		k := lockKeys(redistest.UniqueName(t))
		first := take(t, rdb, k, "a:1", true, 0)
		take(t, rdb, k, "fplain:1", false, time.Minute)
		take(t, rdb, k, "fenced:1", true, time.Minute)
		if u := release(t, rdb, k, "a:1", time.Second); u.Grantee != "fplain:1" || u.Token != 0 {
			t.Fatalf("a's unlock = %+v; want a grant to fplain:1 without a token", u)
		}
		if u := release(t, rdb, k, "fplain:1", time.Second); u.Grantee != "fenced:1" || u.Token <= first.Token {
			t.Fatalf("fplain's unlock = %+v; want a grant to fenced:1 with a token above %d", u, first.Token)
		}
	})
}

// A release never grants the lock to its own handle: a place of the
// handle left in line (a Lock whose leave failed, then a TryLock that took
// the lock) is dropped, and the next waiter is granted the lock.
func TestRLockGrantSkipsOwnPlace(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		take(t, rdb, k, "x:1", false, 0)
		take(t, rdb, k, "a:1", false, time.Minute)
		rdb.Del(ctx, k.Lock) // x's lease ran out; a's Lock gave up, its leave lost
		if res := take(t, rdb, k, "a:2", false, 0); !res.OK {
			t.Fatalf("a's TryLock = %+v", res)
		}
		take(t, rdb, k, "c:1", false, time.Minute)
		if u := release(t, rdb, k, "a:2", time.Second); u.Grantee != "c:1" {
			t.Fatalf("a's unlock = %+v; want a grant to c:1", u)
		}
		if n := rdb.Exists(ctx, k.Queue, k.Places+"a").Val(); n != 0 {
			t.Fatalf("%d of a's line keys left", n)
		}
	})
}

// An attempt whose wait the handle has given up, run late after the
// handle's next hold began (a higher number after the same owner id),
// joins no line: its place would name an id nobody waits with.
func TestRLockLateAttemptJoinsNoLine(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		take(t, rdb, k, "a:2", false, 0)
		if res := take(t, rdb, k, "a:1", false, time.Minute); res.OK {
			t.Fatalf("late attempt = %+v, want refused", res)
		}
		if n := rdb.Exists(ctx, k.Queue, k.Places+"a").Val(); n != 0 {
			t.Fatalf("the late attempt left %d line keys", n)
		}
		if res := take(t, rdb, k, "b:1", false, time.Minute); res.OK || rdb.LLen(ctx, k.Queue).Val() != 1 {
			t.Fatalf("another handle's attempt = %+v, want refused and in line", res)
		}
	})
}

// An attempt of an earlier wait of a handle (hold id a:1), run late while
// a later wait of the handle (a:2) is in line, leaves a:2's place as it
// was: a grant then goes to a:2, the waiter that is really there.
func TestRLockLateAttemptKeepsLaterPlace(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		k := lockKeys(redistest.UniqueName(t))
		take(t, rdb, k, "b:1", false, 0)
		if res := take(t, rdb, k, "a:2", false, time.Minute); res.OK {
			t.Fatalf("a:2 = %+v, want refused and in line", res)
		}
		placed := rdb.Get(ctx, k.Places+"a").Val()
		if res := take(t, rdb, k, "a:1", false, time.Minute); res.OK {
			t.Fatalf("late attempt = %+v, want refused", res)
		}
		if got := rdb.Get(ctx, k.Places+"a").Val(); got != placed || !strings.HasPrefix(got, "a:2#") {
			t.Fatalf("a's place after the late attempt = %q, want %q (a:2's)", got, placed)
		}
		if n := rdb.LLen(ctx, k.Queue).Val(); n != 1 {
			t.Fatalf("the line has %d entries, want 1", n)
		}
	})
}
