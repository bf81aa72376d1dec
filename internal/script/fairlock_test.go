package script_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// fair drives a fair lock's scripts by hold id, as the engine does.
type fair struct {
	t   *testing.T
	rdb *redis.Client
	n   keyspace.Names
	k   script.FairKeys
}

func newFair(t *testing.T, rdb *redis.Client) fair {
	n := keyspace.NewNames(redistest.UniqueName(t))
	return fair{t: t, rdb: rdb, n: n, k: fairKeys(n.Name)}
}

// take runs an attempt of hold id; patience > 0 makes it a blocking one.
func (f fair) take(id string, fencing bool, patience time.Duration) script.Acquired {
	f.t.Helper()
	a, err := script.FairTake(f.t.Context(), f.rdb, f.k, script.FairTakeArgs{
		ID: id, Lease: fenceLease, Fencing: fencing, Patience: patience, GrantLease: time.Second, Deadline: redistest.InTime(),
	}).Result()
	if err != nil {
		f.t.Fatalf("acquire by %s: %v", id, err)
	}
	return a
}

func (f fair) unlock(id string) script.Unlocked {
	f.t.Helper()
	u, err := script.FairUnlock(f.t.Context(), f.rdb, f.k, script.ReleaseArgs{ID: id, Lease: fenceLease, GrantLease: time.Second}).Result()
	if err != nil {
		f.t.Fatalf("unlock by %s: %v", id, err)
	}
	return u
}

func (f fair) leave(id string) int64 {
	f.t.Helper()
	n, err := script.FairLeave(f.t.Context(), f.rdb, f.k, id, false).Result()
	if err != nil {
		f.t.Fatalf("leave by %s: %v", id, err)
	}
	return n
}

// subscribe listens on the waiter channel of owner.
func (f fair) subscribe(owner string) *redis.PubSub {
	f.t.Helper()
	sub := f.rdb.Subscribe(f.t.Context(), f.n.WaiterChannel(owner))
	f.t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
	return sub
}

// A resend of an attempt that took the lock, and an attempt of a wait
// that a release granted the lock, report the hold with its token and
// re-arm its lease.
func TestFairResendReportsHold(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		f := newFair(t, rdb)
		first := f.take("a:1", true, time.Minute)
		if !first.OK || first.Token == 0 {
			t.Fatalf("first acquisition = %+v; want a hold with a token", first)
		}
		rdb.PExpire(t.Context(), f.k.Lock, time.Second)
		if again := f.take("a:1", true, time.Minute); !again.OK || again.Holds != 1 || again.Token != first.Token {
			t.Fatalf("resend = %+v; want the hold with token %d", again, first.Token)
		}
		if d := rdb.PTTL(t.Context(), f.k.Lock).Val(); d < fenceLease-time.Second {
			t.Fatalf("lease after the resend %v, want it re-armed to %v", d, fenceLease)
		}
		if w := f.take("b:1", true, time.Minute); w.OK {
			t.Fatalf("b's attempt = %+v; want refused", w)
		}
		u := f.unlock("a:1")
		if u.Grantee != "b:1" || u.Token <= first.Token {
			t.Fatalf("a's release = %+v; want a grant to b:1 with a token above %d", u, first.Token)
		}
		if got := f.take("b:1", true, time.Minute); !got.OK || got.Token != u.Token {
			t.Fatalf("b's attempt after the grant = %+v; want the hold with token %d", got, u.Token)
		}
		// The handle's next wait has another id: the hold given up is
		// another holder to it.
		if got := f.take("b:2", true, 0); got.OK {
			t.Fatalf("b's next id's attempt = %+v; want refused", got)
		}
	})
}

// A release by an id the handle has done with, run late after its next
// hold (another id) was taken, changes nothing.
func TestFairLateReleaseByOldID(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		f := newFair(t, rdb)
		if !f.take("a:1", false, 0).OK {
			t.Fatal("a:1 refused")
		}
		if u := f.unlock("a:1"); u.Holds != 0 {
			t.Fatalf("release of a:1 = %+v", u)
		}
		if !f.take("a:2", false, 0).OK {
			t.Fatal("a:2 refused")
		}
		if u := f.unlock("a:1"); u.Holds != script.UnlockNotHeld {
			t.Fatalf("late release of a:1 = %+v; want not held", u)
		}
		if got := rdb.HKeys(t.Context(), f.k.Lock).Val(); len(got) != 1 || got[0] != "a:2" {
			t.Fatalf("holders after the late release %v; want a:2", got)
		}
	})
}

// A leave names the wait's id: one that runs late, after a later wait of
// the handle took its place, leaves that place alone; the later wait's
// leave takes it, and a leave whose wait was granted reports the grant.
func TestFairLeaveByID(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		f := newFair(t, rdb)
		f.take("h:1", false, 0)
		f.take("a:1", true, time.Minute)
		f.take("a:2", true, time.Minute) // a's next wait: the place names a:2
		if n := f.leave("a:1"); n != script.LeftNothing {
			t.Fatalf("late leave of a:1 = %d; want nothing", n)
		}
		if v := rdb.Get(t.Context(), f.n.Place("a")).Val(); v != "fa:2#0/1000" {
			t.Fatalf("a's place after the late leave %q; want fa:2#0/1000", v)
		}
		if q := rdb.LRange(t.Context(), f.k.Queue, 0, -1).Val(); len(q) != 1 || q[0] != "a" {
			t.Fatalf("line after the late leave %v; want [a]", q)
		}
		if n := f.leave("a:2"); n != script.LeftLine {
			t.Fatalf("leave of a:2 = %d; want left the line", n)
		}
		if n := rdb.Exists(t.Context(), f.n.Place("a"), f.k.Queue).Val(); n != 0 {
			t.Fatalf("%d of a's place and the line left", n)
		}

		f.take("a:3", false, time.Minute)
		if u := f.unlock("h:1"); u.Grantee != "a:3" {
			t.Fatalf("h's release = %+v; want a grant to a:3", u)
		}
		if n := f.leave("a:3"); n != script.LeftGranted {
			t.Fatalf("leave of a:3 = %d; want granted", n)
		}
		if n := f.leave("a:2"); n != script.LeftNothing {
			t.Fatalf("leave of a:2 under a:3's grant = %d; want nothing", n)
		}
	})
}

// A grant message names the hold id granted, and the token whole (Lua's
// tostring would round 16 digits to 14). A host name that begins with an
// f is no fencing flag.
func TestFairGrantNamesHoldID(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, fencing := range []bool{true, false} {
			t.Run(strconv.FormatBool(fencing), func(t *testing.T) {
				f := newFair(t, rdb)
				held := f.take("a:1", fencing, 0)
				for _, id := range []string{"b:7", "fhost:1:u:3"} {
					if w := f.take(id, fencing, time.Minute); w.OK {
						t.Fatalf("%s's attempt = %+v; want refused", id, w)
					}
				}
				token := held.Token
				for _, g := range []struct{ releaser, id, owner string }{{"a:1", "b:7", "b"}, {"b:7", "fhost:1:u:3", "fhost:1:u"}} {
					sub := f.subscribe(g.owner)
					u := f.unlock(g.releaser)
					if u.Grantee != g.id || fencing != (u.Token > token) {
						t.Fatalf("%s's release = %+v; want a grant to %s, fencing %v above %d", g.releaser, u, g.id, fencing, token)
					}
					want := "h" + strconv.FormatUint(u.Token, 10) + ":" + g.id + "#0"
					if msg, err := sub.ReceiveMessage(t.Context()); err != nil || msg.Payload != want {
						t.Fatalf("grant message %v, %v; want %s", msg, err, want)
					}
					if ok, _ := rdb.HExists(t.Context(), f.k.Lock, g.id).Result(); !ok {
						t.Fatalf("%s does not hold after its grant: %v", g.id, rdb.HGetAll(t.Context(), f.k.Lock).Val())
					}
					if g, ok := script.ParseGrant(want); !ok || g.ID != u.Grantee || g.Token != u.Token {
						t.Fatalf("ParseGrant(%q) = %+v, %v", want, g, ok)
					}
					token = u.Token
				}
			})
		}
	})
}

// A force unlock aims at the hold ids it read: a hold taken since, under
// another id, is not deleted.
func TestFairForceUnlockAim(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		f := newFair(t, rdb)
		f.take("a:1", true, 0)
		aim := script.Aim(rdb.HGetAll(ctx, f.k.Lock).Val())
		f.unlock("a:1")
		f.take("a:2", true, 0)
		if n, err := script.FairForceUnlock(ctx, rdb, f.k, f.n.Sub("r1"), time.Minute, false, aim).Result(); err != nil || n != script.ForceMoved {
			t.Fatalf("force unlock aimed at a:1 = %d, %v; want moved", n, err)
		}
		aim = script.Aim(rdb.HGetAll(ctx, f.k.Lock).Val())
		if n, err := script.FairForceUnlock(ctx, rdb, f.k, f.n.Sub("r2"), time.Minute, false, aim).Result(); err != nil || n != script.ForceDeleted {
			t.Fatalf("force unlock aimed at a:2 = %d, %v; want deleted", n, err)
		}
	})
}

// An election's leadership is held by hold id: a resignation grants it
// with the grantee's value, a proclaim names the leadership's id, and a
// late resignation or proclaim of an earlier id changes nothing.
func TestElectionByHoldID(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		n := keyspace.NewNames(redistest.UniqueName(t))
		k := script.ElectionKeys{FairKeys: fairKeys(n.Name), Changes: n.Channel(), Values: n.Value("")}
		campaign := func(id, value string) script.Acquired {
			t.Helper()
			a, err := script.ElectionCampaign(ctx, rdb, k, script.Candidacy{Value: value, FairTakeArgs: script.FairTakeArgs{
				ID: id, Lease: fenceLease, Fencing: true, Patience: time.Minute, GrantLease: time.Second, Deadline: redistest.InTime(),
			}}).Result()
			if err != nil {
				t.Fatalf("campaign of %s: %v", id, err)
			}
			return a
		}
		resign := func(id string) script.Unlocked {
			t.Helper()
			u, err := script.ElectionResign(ctx, rdb, k, script.ReleaseArgs{ID: id, Lease: fenceLease, GrantLease: time.Second}).Result()
			if err != nil {
				t.Fatalf("resignation of %s: %v", id, err)
			}
			return u
		}
		proclaim := func(id string, term uint64, seq uint64) int64 {
			t.Helper()
			r, err := script.ElectionProclaim(ctx, rdb, k, id, term, seq, "said by "+id, false).Result()
			if err != nil {
				t.Fatalf("proclaim of %s: %v", id, err)
			}
			return r
		}
		a := campaign("a:1", "va")
		if !a.OK || a.Token == 0 {
			t.Fatalf("a's campaign = %+v; want the lead with a term", a)
		}
		if b := campaign("b:1", "vb"); b.OK {
			t.Fatalf("b's campaign = %+v; want refused", b)
		}
		if v := rdb.Get(ctx, k.Values+"b").Val(); v != "vb" {
			t.Fatalf("b's value key %q, want vb", v)
		}
		u := resign("a:1")
		if u.Grantee != "b:1" || u.Token <= a.Token {
			t.Fatalf("a's resignation = %+v; want a grant to b:1 in a later term", u)
		}
		if v := rdb.HGet(ctx, k.Lock, "@value").Val(); v != "vb" {
			t.Fatalf("leader's value %q, want vb", v)
		}
		if rdb.Exists(ctx, k.Values+"b").Val() != 0 {
			t.Fatal("b's value key is left after its grant")
		}
		if u := resign("a:1"); u.Holds != script.UnlockNotHeld {
			t.Fatalf("late resignation of a:1 = %+v; want not held", u)
		}
		if r := proclaim("b:0", u.Token, 1); r != script.ProclaimNotLed {
			t.Fatalf("proclaim under an earlier id = %d; want not led", r)
		}
		if r := proclaim("b:1", u.Token, 2); r != script.ProclaimDone {
			t.Fatalf("proclaim of b:1 = %d; want done", r)
		}
		if v := rdb.HGet(ctx, k.Lock, "@value").Val(); v != "said by b:1" {
			t.Fatalf("leader's value after the proclaim %q", v)
		}
		if u := resign("b:1"); u.Holds != 0 || rdb.Exists(ctx, k.Lock).Val() != 0 {
			t.Fatalf("b's resignation = %+v; want the leadership ended", u)
		}
	})
}
