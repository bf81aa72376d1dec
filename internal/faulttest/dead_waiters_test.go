package faulttest_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// Dead waiters at the head of a line: however many of them died there,
// the live waiters behind them lose one grant lease at most, and no more
// than a fairlock waiter's own WithWaiterTimeout when that is shorter.

// fairlockWait1s is fairlock with WithWaiterTimeout(1s) on every handle.
// It is not in primitives (the rest of the suite need not run on it); the
// helper processes find it by name.
var fairlockWait1s = func() primitive {
	p := fairlockPrimitive
	p.name = "fairlock-wait-1s"
	p.new = func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(lease), fairlock.WithWaiterTimeout(time.Second))
	}
	return p
}()

// liveHold is when one of several live waiters (by index) held the lock.
type liveHold struct {
	i   int
	err error
	at  time.Time
}

// Two waiter processes SIGKILLed at the head of the line, two live
// waiters (each its own client) behind them. Released at the kill, the
// lock goes to the first dead waiter (its place has not lapsed), which
// holds it for the grant lease; by then the second's place has lapsed
// too, and the lock passes it by. Released once both places lapsed, it
// goes to a live waiter at once. Either way each live waiter holds within
// 3.5s of the kill, and within 1s of the end of the hold before its own:
// a release, or the lapse of the dead waiter's grant.
func TestDeadWaitersCostOneGrantLease(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		for _, c := range []struct {
			name   string
			lapsed bool // the holder releases once the dead waiters' places lapsed
		}{{"released at the kill", false}, {"released after their places lapsed", true}} {
			t.Run(c.name, func(t *testing.T) { deadWaitersAtHead(t, p, c.lapsed) })
		}
	})
}

func deadWaitersAtHead(t *testing.T, p primitive, lapsed bool) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	n := keyspace.NewNames(name)
	const lease = 30 * time.Second // the default watchdog timeout
	holder := p.new(srv.NewClient(t), name, lease)
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	var dead []*redistest.Helper
	for i := range 2 {
		dead = append(dead, redistest.StartHelper(t, "wait", helperArgs(p, srv.Addr(), name, lease)...))
		parked(t, admin, name, i+1)
	}
	live := make([]locker, 2)
	got := make(chan liveHold, len(live))
	for i := range live {
		live[i] = p.new(srv.NewClient(t), name, lease)
		go func() {
			err := live[i].Lock(t.Context())
			got <- liveHold{i, err, time.Now()}
		}()
		parked(t, admin, name, 3+i)
	}
	line := parked(t, admin, name, 4)
	killed := time.Now()
	for _, h := range dead {
		h.Kill()
	}
	if lapsed {
		redistest.WaitFor(t, 10*time.Second, func() bool {
			return admin.Exists(t.Context(), n.Place(line[0]), n.Place(line[1])).Val() == 0
		})
	}
	released := time.Now()
	if err := holder.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The hold before the first live waiter's: the holder's, or a grant
	// to the first dead waiter, which lapses at the latest a grant lease
	// after the release's reply.
	ended := released
	if redistest.HeldBy(t.Context(), admin, n.Lock(), line[0]) == "1" {
		ended = time.Now().Add(hold.GrantLease)
		t.Logf("the release granted the lock to the first dead waiter")
	}
	for range live {
		var r liveHold
		select {
		case r = <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("a live waiter never held the lock")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		sinceKill, sinceEnd := r.at.Sub(killed), r.at.Sub(ended)
		t.Logf("live waiter %d held %v after the kill, %v after the hold before it ended",
			r.i, sinceKill.Round(time.Millisecond), sinceEnd.Round(time.Millisecond))
		if sinceKill > 3500*time.Millisecond {
			t.Errorf("live waiter %d held %v after the kill, want within 3.5s", r.i, sinceKill)
		}
		if sinceEnd > time.Second {
			t.Errorf("live waiter %d held %v after the hold before it ended, want within 1s", r.i, sinceEnd)
		}
		ended = time.Now()
		if err := live[r.i].Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// A fairlock waiter whose process was SIGKILLed at the head of the line,
// every handle with WithWaiterTimeout(1s), the holder released at the
// kill: the release grants the dead head the lock (its place has not
// lapsed), but only for its waiter timeout, not the grant lease, so the
// live waiter behind it holds within 2s of the release.
func TestDeadHeadWithShortWaiterTimeout(t *testing.T) {
	p := fairlockWait1s
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	const lease = 30 * time.Second
	holder := p.new(srv.NewClient(t), name, lease)
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	dead := redistest.StartHelper(t, "wait", helperArgs(p, srv.Addr(), name, lease)...)
	parked(t, admin, name, 1)
	next := p.new(srv.NewClient(t), name, lease)
	got := lockAsync(t.Context(), next)
	line := parked(t, admin, name, 2)
	dead.Kill()
	released := time.Now()
	if err := holder.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	grant := admin.PTTL(t.Context(), mainKey(name)).Val()
	if redistest.HeldBy(t.Context(), admin, mainKey(name), line[0]) == "1" {
		t.Logf("the release granted the dead head the lock for %v", grant)
	}
	took := heldAt(t, got, 20*time.Second, "the waiter behind the dead head").Sub(released)
	t.Logf("the waiter behind the dead head held %v after the release", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the waiter behind the dead head held %v after the release, want within 2s", took)
	}
	if err := next.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}
