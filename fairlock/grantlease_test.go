package fairlock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// A grant lasts the grantee's own grant lease, which its place names: the
// shorter of the grant lease and its waiter timeout. So a waiter that set
// a 1s timeout and died costs those behind it 1s, not the grant lease,
// whether a release grants it the lock or an attempt that finds the lock
// free does.
func TestGrantLastsWaiterTimeoutMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("short")
	acquire := func(owner string, patience time.Duration, seq uint64) script.Acquired {
		t.Helper()
		res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: owner + ":" + strconv.FormatUint(seq, 10), Lease: time.Minute, Fencing: false, Patience: patience, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
		if err != nil {
			t.Fatalf("%s's attempt: %v", owner, err)
		}
		return res
	}
	if !acquire("holder", 0, 1).OK {
		t.Fatal("the holder did not take the free lock")
	}
	for _, w := range []struct {
		owner    string
		patience time.Duration
		seq      uint64
		place    string
	}{{"short", time.Second, 2, "short:2#0/1000"}, {"long", time.Minute, 3, "long:3#0/3000"}} {
		if acquire(w.owner, w.patience, w.seq).OK {
			t.Fatalf("%s took the held lock", w.owner)
		}
		if v := rdb.Get(ctx, k.Places+w.owner).Val(); v != w.place {
			t.Fatalf("%s's place = %q, want %q", w.owner, v, w.place)
		}
	}
	grants := []struct{ from, to string }{{"holder:1", "short:2"}, {"short:2", "long:3"}}
	for i, want := range []time.Duration{time.Second, hold.GrantLease} {
		g := grants[i]
		u, err := script.FairUnlock(ctx, rdb, k, script.ReleaseArgs{ID: g.from, Lease: time.Minute, Sharded: false, GrantLease: hold.GrantLease}).Result()
		if err != nil || u.Grantee != g.to {
			t.Fatalf("%s's unlock = %+v, %v; want a grant to %s", g.from, u, err, g.to)
		}
		if d := rdb.PTTL(ctx, k.Lock).Val(); d != want {
			t.Fatalf("the grant to %s lasts %v, want %v", g.to, d, want)
		}
	}

	// A lock found free (its holder's lease ran out) by a newcomer, with
	// a live waiter of a 1s timeout first in line.
	rdb.Del(ctx, k.Lock)
	if !acquire("holder", 0, 4).OK || acquire("short", time.Second, 5).OK {
		t.Fatal("the holder did not take the free lock, or short did not wait behind it")
	}
	rdb.Del(ctx, k.Lock)
	res := acquire("newcomer", time.Minute, 6)
	if res.OK || res.Wait != time.Second {
		t.Fatalf("newcomer's attempt = %+v; want refused, waiting for short's 1s grant", res)
	}
	if h, d := redistest.Holders(ctx, rdb, k.Lock), rdb.PTTL(ctx, k.Lock).Val(); h["short:5"] != "1" || d != time.Second {
		t.Fatalf("lock = %v for %v, want granted to short for 1s", h, d)
	}
}
