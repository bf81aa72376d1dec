package fairlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// Unit tier: miniredis. Its TIME, which the scripts use for waiter
// deadlines, follows SetTime; key TTLs follow FastForward.

// ghostKeys are the script keys of the lock called name, for tests that
// put a waiter in line without a live Lock behind it (a crashed process).
func ghostKeys(name string) script.FairKeys {
	n := keyspace.NewNames(name)
	return script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place("")}
}

func TestFIFOMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	holder := fairlock.New(rdb, "fifo")
	mustLock(t, holder)
	waiters := handles(3, func() redis.UniversalClient { return rdb }, "fifo")
	got := queueUp(t, rdb, "fifo", waiters)
	if ok, err := fairlock.New(rdb, "fifo").TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while held with a line = %v, %v", ok, err)
	}
	mustUnlock(t, holder)
	inTurn(t, got, waiters)
	assertNoKeys(t, rdb, "fifo")
}

func TestNoBargingAndDeadWaiterMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	now := time.Now()
	mr.SetTime(now)
	k := ghostKeys("ghost")
	// A waiter that joined the line and then crashed.
	res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "ghost-owner:1", Lease: time.Minute, Fencing: false, Patience: 5 * time.Second, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
	if err != nil || !res.OK {
		t.Fatalf("ghost acquire on a free lock = %+v, %v; want the lock", res, err)
	}
	holder := fairlock.New(rdb, "ghost")
	if ok, err := holder.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while the ghost holds = %v, %v", ok, err)
	}
	if q, _ := line(t, rdb, "ghost"); len(q) != 0 {
		t.Fatalf("TryLock joined the line: %v", q)
	}
	res, err = script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "ghost-2:1", Lease: time.Minute, Fencing: false, Patience: 5 * time.Second, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
	if err != nil || res.OK {
		t.Fatalf("second ghost = %+v, %v; want a place in line", res, err)
	}
	// The deadline is the server's clock plus the waiter timeout.
	score, err := rdb.ZScore(ctx, k.Timeouts, "ghost-2").Result()
	if want := float64(now.Add(5 * time.Second).UnixMilli()); err != nil || score != want {
		t.Fatalf("deadline = %v, %v; want %v", score, err, want)
	}
	if u, err := script.FairUnlock(ctx, rdb, k, script.ReleaseArgs{ID: "ghost-owner:1", Lease: time.Minute, Sharded: false, GrantLease: hold.GrantLease}).Result(); u.Holds != 0 || u.Grantee != "ghost-2:1" || err != nil {
		t.Fatalf("ghost unlock = %+v, %v; want released and granted to ghost-2", u, err)
	}
	// Free, but ghost-2 is first in line: no barging.
	if ok, err := holder.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock past a waiter in line = %v, %v", ok, err)
	}
	mr.SetTime(now.Add(5*time.Second + time.Millisecond))
	mr.FastForward(5*time.Second + time.Millisecond)
	if ok, err := holder.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the dead waiter's deadline = %v, %v", ok, err)
	}
	mustUnlock(t, holder)
	assertNoKeys(t, rdb, "ghost")
}

func TestLineKeysExpireMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("expire")
	mr.SetTime(time.Now())
	holder := fairlock.New(rdb, "expire", fairlock.WithLeaseTime(time.Minute))
	mustLock(t, holder)
	for i, patience := range []time.Duration{3 * time.Second, 9 * time.Second, 4 * time.Second} {
		owner := "ghost-" + strconv.Itoa(i)
		if _, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: owner + ":1", Lease: time.Minute, Fencing: false, Patience: patience, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil {
			t.Fatal(err)
		}
	}
	// Both keys of the line live as long as its longest-lived waiter.
	for _, key := range []string{k.Queue, k.Timeouts} {
		if ttl := mr.TTL(key); ttl < 8*time.Second || ttl > 9*time.Second {
			t.Fatalf("TTL of %s = %v, want 9s", key, ttl)
		}
	}
	mr.FastForward(9*time.Second + time.Millisecond)
	if mr.Exists(k.Queue) || mr.Exists(k.Timeouts) {
		t.Fatal("line of crashed waiters outlived their deadlines")
	}
	mustUnlock(t, holder)
	assertNoKeys(t, rdb, "expire")
}

// The leave script does not release a grant (it may run late, when a
// later Lock of the owner holds the lock): it reports it, for the caller
// to give back once it has read the reply. A grant nobody gives back
// (its waiter's process died) lapses with its lease, and the next waiter
// then takes the lock.
func TestLeaveKeepsGrantMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("leave")
	holder := fairlock.New(rdb, "leave")
	mustLock(t, holder)
	if _, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "ghost:1", Lease: time.Minute, Fencing: false, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil {
		t.Fatal(err)
	}
	waiter := fairlock.New(rdb, "leave")
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, rdb, "leave") == 2 })
	mustUnlock(t, holder) // grants the lock to the ghost, which never comes
	if n, err := script.FairLeave(ctx, rdb, k, "ghost:1", false).Result(); n != script.LeftGranted || err != nil {
		t.Fatalf("ghost leave = %v, %v; want LeftGranted: it was granted the lock, not in line", n, err)
	}
	if held := rdb.HGet(ctx, k.Lock, "ghost:1").Val(); held != "1" {
		t.Fatalf("ghost's grant = %q after its leave, want kept", held)
	}
	select {
	case err := <-got:
		t.Fatalf("waiter's Lock returned (%v) while the ghost's grant stood", err)
	case <-time.After(100 * time.Millisecond):
	}
	mr.FastForward(hold.GrantLease) // the grant lapses
	start := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter never took the lock after the grant lapsed")
	}
	// A parked waiter attempts at least every third of the grant lease.
	if d := time.Since(start); d > hold.GrantLease/3+500*time.Millisecond {
		t.Fatalf("waiter took %v after the grant lapsed", d)
	}
	mustUnlock(t, waiter)
	assertNoKeys(t, rdb, "leave")
}

func TestCancelledWaiterMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	holder := fairlock.New(rdb, "cancel")
	mustLock(t, holder)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := fairlock.New(rdb, "cancel").Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
	}
	perclient.AwaitTidied(t.Context()) // the place in line is left in the background
	if q, z := line(t, rdb, "cancel"); len(q)+len(z) != 0 {
		t.Fatalf("cancelled waiter left %v in line and %v in the deadlines", q, z)
	}
	mustUnlock(t, holder)
	assertNoKeys(t, rdb, "cancel")
}

func TestReentrancyMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	a := fairlock.New(rdb, "r")
	b := fairlock.New(rdb, "r")
	err := a.Do(t.Context(), func(ctx context.Context) error {
		mustLockCtx(t, ctx, a)
		if n, err := a.HoldCount(ctx); err != nil || n != 2 {
			t.Fatalf("HoldCount = %d, %v; want 2", n, err)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("other handle TryLock = %v, %v while held once", ok, err)
		}
		if err := b.Unlock(ctx); !errors.Is(err, fairlock.ErrNotHeld) {
			t.Fatalf("Unlock by non-holder = %v, want ErrNotHeld", err)
		}
		if n, _ := a.HoldCount(ctx); n != 1 {
			t.Fatalf("non-holder Unlock changed the hold count to %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := a.Unlock(ctx); !errors.Is(err, fairlock.ErrNotHeld) {
		t.Fatalf("Unlock after release = %v, want ErrNotHeld", err)
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done open after the last Unlock")
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after release = %v, %v", ok, err)
	}
	mustUnlock(t, b)
	assertNoKeys(t, rdb, "r")
}

func TestFencingMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	var last uint64
	for i := range 3 {
		m := fairlock.New(rdb, "fence", fairlock.WithFencing())
		err := m.Do(t.Context(), func(ctx context.Context) error {
			mustLockCtx(t, ctx, m) // a re-entry keeps the token
			if tok := m.Token(); tok <= last {
				t.Fatalf("hold %d: token %d not above %d", i, tok, last)
			}
			last = m.Token()
			return m.Unlock(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if m.Token() != 0 {
			t.Fatal("Token not 0 after release")
		}
	}
}

// mustLockCtx locks m with ctx: a re-entry when ctx carries m's hold.
func mustLockCtx(t testing.TB, ctx context.Context, m *fairlock.Mutex) {
	t.Helper()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
}

// redisLevels sums the hold counts of the lock called name in Redis.
func redisLevels(t testing.TB, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	var n int64
	for _, v := range redistest.Holders(t.Context(), rdb, keyspace.NewNames(name).Lock()) {
		c, _ := strconv.ParseInt(v, 10, 64)
		n += c
	}
	return n
}

func TestWrongTypeMini(t *testing.T) {
	n := keyspace.NewNames("taken")
	for _, key := range []string{n.Lock(), n.Queue(), n.Timeouts()} {
		t.Run(key, func(t *testing.T) {
			mr, rdb := redistest.Mini(t)
			ctx := t.Context()
			if err := mr.Set(key, "user data"); err != nil {
				t.Fatal(err)
			}
			m := fairlock.New(rdb, "taken")
			if _, err := m.TryLock(ctx); !errors.Is(err, fairlock.ErrWrongType) {
				t.Fatalf("TryLock = %v, want ErrWrongType", err)
			}
			if err := m.Lock(ctx); !errors.Is(err, fairlock.ErrWrongType) {
				t.Fatalf("Lock = %v, want ErrWrongType", err)
			}
			if _, err := m.ForceUnlock(ctx); !errors.Is(err, fairlock.ErrWrongType) {
				t.Fatalf("ForceUnlock = %v, want ErrWrongType", err)
			}
			if keys := mr.Keys(); len(keys) != 1 || keys[0] != key {
				t.Fatalf("keys = %v, want only %s", keys, key)
			}
			if v, _ := mr.Get(key); v != "user data" {
				t.Fatalf("string key changed to %q", v)
			}
		})
	}
}

func TestNewPanics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for name, f := range map[string]func(){
		"nil client":     func() { fairlock.New(nil, "x") },
		"empty name":     func() { fairlock.New(rdb, "") },
		"zero lease":     func() { fairlock.New(rdb, "x", fairlock.WithLeaseTime(0)) },
		"tiny watchdog":  func() { fairlock.New(rdb, "x", fairlock.WithWatchdogTimeout(time.Millisecond)) },
		"tiny patience":  func() { fairlock.New(rdb, "x", fairlock.WithWaiterTimeout(10*time.Millisecond)) },
		"negative waits": func() { fairlock.New(rdb, "x", fairlock.WithWaiterTimeout(-time.Second)) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, _ := r.(string); len(s) < 10 {
					t.Fatalf("panic message %v is not a clear message", r)
				}
			}()
			f()
		})
	}
}

func TestErrorMessages(t *testing.T) {
	_, rdb := redistest.Mini(t)
	err := fairlock.New(rdb, "jobs").Unlock(t.Context())
	if got, want := err.Error(), `fairlock: unlock "jobs": lock not held`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
	holder := fairlock.New(rdb, "jobs")
	mustLock(t, holder)
	defer mustUnlock(t, holder)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = fairlock.New(rdb, "jobs").Lock(ctx)
	if got, want := err.Error(), `fairlock: lock "jobs": context deadline exceeded`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

// Waiters whose process died at the head of the line (their places lapsed,
// their waiter timeouts not yet) are skipped by the release: the live
// waiter behind them holds at once, not one grant lease per dead waiter.
func TestDeadWaitersDoNotStackMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("stack")
	holder := fairlock.New(rdb, "stack")
	mustLock(t, holder)
	for _, ghost := range []string{"ghost-1", "ghost-2"} {
		if res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: ghost + ":1", Lease: time.Minute, Fencing: false, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil || res.OK {
			t.Fatalf("%s's attempt = %+v, %v; want a place in line", ghost, res, err)
		}
		rdb.Del(ctx, k.Places+ghost) // silent for longer than a grant lease
	}
	waiter := fairlock.New(rdb, "stack")
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return rdb.LLen(ctx, k.Queue).Val() == 3 })
	released := time.Now()
	mustUnlock(t, holder)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hold.GrantLease):
		t.Fatalf("the live waiter did not hold within a grant lease of the release")
	}
	if d := time.Since(released); d > hold.GrantLease {
		t.Fatalf("the live waiter held %v after the release", d)
	}
	if q := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(q) != 0 {
		t.Fatalf("line after the grant = %v, want the dead waiters gone", q)
	}
	mustUnlock(t, waiter)
	assertNoKeys(t, rdb, "stack")
}

// A lock found free (its holder's lease ran out) with a dead waiter first
// in line goes to the live waiter that attempts, not to the dead one.
func TestFreeLockSkipsDeadHeadMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("skip")
	if res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "holder:1", Lease: time.Minute, Fencing: false, Patience: 0, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil || !res.OK {
		t.Fatalf("holder's attempt = %+v, %v", res, err)
	}
	for _, w := range []string{"ghost", "live"} {
		if res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: w + ":1", Lease: time.Minute, Fencing: false, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil || res.OK {
			t.Fatalf("%s's attempt = %+v, %v; want a place in line", w, res, err)
		}
	}
	rdb.Del(ctx, k.Places+"ghost", k.Lock) // the ghost went silent; the holder's lease ran out
	res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "live:1", Lease: time.Minute, Fencing: false, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
	if err != nil || !res.OK {
		t.Fatalf("live waiter's attempt on the free lock = %+v, %v; want the lock", res, err)
	}
	if q := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(q) != 0 {
		t.Fatalf("line = %v, want empty", q)
	}
}

// An attempt that finds the lock free with a live waiter first in line
// (behind a dead one) grants the lock to that waiter, with the fencing
// token its place asks for, and joins the line itself.
func TestFreeLockGrantsLiveHeadMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("grant")
	first, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "holder:1", Lease: time.Minute, Fencing: true, Patience: 0, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
	if err != nil || !first.OK || first.Token == 0 {
		t.Fatalf("holder's attempt = %+v, %v", first, err)
	}
	for _, w := range []string{"ghost", "live"} {
		if res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: w + ":1", Lease: time.Minute, Fencing: true, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result(); err != nil || res.OK {
			t.Fatalf("%s's attempt = %+v, %v; want a place in line", w, res, err)
		}
	}
	rdb.Del(ctx, k.Places+"ghost", k.Lock) // the ghost went silent; the holder's lease ran out
	sub := rdb.Subscribe(ctx, k.Waiter+"live")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "newcomer:1", Lease: time.Minute, Fencing: true, Patience: time.Minute, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
	if err != nil || res.OK {
		t.Fatalf("newcomer's attempt = %+v, %v; want a place behind the live waiter", res, err)
	}
	if h := redistest.Holders(ctx, rdb, k.Lock); len(h) != 1 || h["live:1"] != "1" {
		t.Fatalf("lock = %v, want granted to live", h)
	}
	if n := rdb.Exists(ctx, k.Places+"live").Val(); n != 0 {
		t.Fatal("the grantee's place outlived its grant")
	}
	if q := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(q) != 1 || q[0] != "newcomer" {
		t.Fatalf("line = %v, want [newcomer]", q)
	}
	msg, err := sub.ReceiveMessage(ctx)
	token, id, _ := strings.Cut(strings.TrimPrefix(msg.Payload, "h"), ":")
	if n, _ := strconv.ParseUint(token, 10, 64); err != nil || n <= first.Token || id != "live:1#0" {
		t.Fatalf("grant message = %v, %v; want h<token above %d>:live:1#0 (live's hold id and attempt)", msg, err, first.Token)
	}
	if got := rdb.HGet(ctx, k.Lock, "@token").Val(); got != token {
		t.Fatalf("the grantee's hold records token %q, want the grant's %s", got, token)
	}
}

// An unlock that runs late (after its resend released the lock) finds its
// hold id gone and changes nothing, even with the lock free and its owner
// first in line again: that owner's wait has an id of its own, and its
// attempt takes the free lock.
func TestLateUnlockChangesNothingMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	k := ghostKeys("late")
	take := func(id string, patience time.Duration) script.Acquired {
		t.Helper()
		res, err := script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: id, Lease: time.Minute, Fencing: false, Patience: patience, Sharded: false, GrantLease: hold.GrantLease, Deadline: redistest.InTime()}).Result()
		if err != nil {
			t.Fatalf("%s's attempt: %v", id, err)
		}
		return res
	}
	if !take("holder:1", 0).OK {
		t.Fatal("the holder did not take the free lock")
	}
	for _, id := range []string{"o:2", "w:1"} {
		if take(id, time.Minute).OK {
			t.Fatalf("%s took the held lock", id)
		}
	}
	rdb.Del(ctx, k.Lock) // the holder's lease ran out
	u, err := script.FairUnlock(ctx, rdb, k, script.ReleaseArgs{ID: "o:1", Lease: time.Minute, Sharded: false, GrantLease: hold.GrantLease}).Result()
	if err != nil || u.Holds != script.UnlockNotHeld {
		t.Fatalf("o's late unlock = %+v, %v; want not held", u, err)
	}
	if n := rdb.Exists(ctx, k.Lock).Val(); n != 0 {
		t.Fatalf("lock after the late unlock = %v, want free", redistest.Holders(ctx, rdb, k.Lock))
	}
	if q := rdb.LRange(ctx, k.Queue, 0, -1).Val(); len(q) != 2 || q[0] != "o" {
		t.Fatalf("line = %v, want [o w]", q)
	}
	if !take("o:2", time.Minute).OK {
		t.Fatal("o's waiting attempt did not take the free lock at the head of the line")
	}
}
