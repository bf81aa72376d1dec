package multilock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// Unit tier: miniredis.

var (
	_ multilock.Locker = (*rlock.Mutex)(nil)
	_ multilock.Locker = (*fairlock.Mutex)(nil)
	_ multilock.Locker = (*rwlock.RWMutex)(nil)
)

func TestAllLockUnlockMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	g := multilock.New(rlock.New(rdb, "b"), fairlock.New(rdb, "a"), rwlock.New(rdb, "c"))
	if !redistest.Closed(g.Done()) {
		t.Fatal("Done before any Lock is not a closed channel")
	}
	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := g.Done()
	if redistest.Closed(done) {
		t.Fatal("Done closed while held")
	}
	for _, other := range []multilock.Locker{rlock.New(rdb, "b"), fairlock.New(rdb, "a"), rwlock.New(rdb, "c")} {
		if ok, err := other.TryLock(ctx); ok || err != nil {
			t.Fatalf("%s: TryLock by another handle = %v, %v while the group holds it", other.Name(), ok, err)
		}
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(done) || !redistest.Closed(g.Done()) {
		t.Fatal("Done not closed after Unlock")
	}
	err := g.Unlock(ctx)
	if !errors.Is(err, multilock.ErrNotHeld) || err.Error() != `multilock: unlock ["a" "b" "c"]: lock not held` {
		t.Fatalf("second Unlock = %v, want ErrNotHeld naming the group in canonical order", err)
	}
	assertFree(t, rdb, "a", "b", "c")
}

// assertFree fails unless every named rlock/fairlock/rwlock lock is free.
func assertFree(t *testing.T, rdb redis.UniversalClient, names ...string) {
	t.Helper()
	for _, n := range names {
		if ok, err := rlock.New(rdb, n).IsLocked(t.Context()); ok || err != nil {
			t.Errorf("lock %q still held (%v)", n, err)
		}
	}
}

func TestAllTryLockMeetsTakenMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	other := rlock.New(rdb, "m")
	mustLock(t, other)
	// "a" and "k" come before "m" in canonical order: the group takes them
	// first, then meets "m" and must give them back.
	g := multilock.New(rlock.New(rdb, "z"), rlock.New(rdb, "m"), rlock.New(rdb, "a"), rlock.New(rdb, "k"))
	if ok, err := g.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = %v, %v with a member taken; want false, nil", ok, err)
	}
	assertFree(t, rdb, "a", "k", "z")
	if !redistest.Closed(g.Done()) {
		t.Fatal("Done open after a failed TryLock")
	}
	mustUnlock(t, other)
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("keys left in Redis: %v", keys)
	}
	if ok, err := g.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock on free members = %v, %v", ok, err)
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAllCancelledLockLeavesNothingMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	other := fairlock.New(rdb, "y")
	mustLock(t, other)
	g := multilock.New(rlock.New(rdb, "x"), fairlock.New(rdb, "y"))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := g.Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), `multilock: lock ["x" "y"]: `) {
		t.Fatalf("Lock = %v, want a deadline error naming the group", err)
	}
	perclient.AwaitTidied(t.Context()) // what the cancelled attempts took goes back in the background
	assertFree(t, rdb, "x")
	mustUnlock(t, other)
	// The fair lock's line is empty too: no key of either lock is left.
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("keys left in Redis: %v", keys)
	}
}

func TestAllMemberErrorUndoesMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	// The lock key of "s" holds a string: the member fails after "a" was taken.
	key := lockKey(t, rdb, "s")
	if err := mr.Set(key, "user data"); err != nil {
		t.Fatal(err)
	}
	g := multilock.New(rlock.New(rdb, "a"), rlock.New(rdb, "s"))
	err := g.Lock(t.Context())
	if !errors.Is(err, rlock.ErrWrongType) {
		t.Fatalf("Lock with a wrong-typed member = %v, want ErrWrongType", err)
	}
	assertFree(t, rdb, "a")
	if v, _ := mr.Get(key); v != "user data" {
		t.Fatalf("wrong-typed key changed to %q", v)
	}
}

// lockKey finds the Redis key of the rlock called name by taking it once.
func lockKey(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	m := rlock.New(rdb, name)
	mustLock(t, m)
	defer mustUnlock(t, m)
	keys, err := rdb.Keys(t.Context(), "*"+name+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of %q: %v, %v", name, keys, err)
	}
	return keys[0]
}

func TestAllDoneOnLossMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	g := multilock.New(rlock.New(rdb, "p", rlock.WithWatchdogTimeout(300*time.Millisecond)), rlock.New(rdb, "q"))
	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rlock.New(rdb, "p").ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("group Done still open 5s after a member was force-unlocked")
	}
	err := g.Unlock(ctx)
	if !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after a loss = %v, want the lost member's ErrNotHeld", err)
	}
	assertFree(t, rdb, "p", "q")
}

func TestAllReentryThroughMemberDoMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	a, b := rlock.New(rdb, "a"), rlock.New(rdb, "b")
	g := multilock.New(a, b)
	err := a.Do(t.Context(), func(ctx context.Context) error {
		return b.Do(ctx, func(ctx context.Context) error {
			if err := g.Lock(ctx); err != nil {
				return err
			}
			for _, m := range []*rlock.Mutex{a, b} {
				if n, _ := m.HoldCount(ctx); n != 2 {
					t.Errorf("%s: HoldCount = %d inside the group, want 2", m.Name(), n)
				}
			}
			if err := g.Unlock(ctx); err != nil {
				return err
			}
			if n, _ := a.HoldCount(ctx); n != 1 {
				t.Errorf("HoldCount after the group's Unlock = %d, want 1", n)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	assertFree(t, rdb, "a", "b")
}

func TestNewPanics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	a := rlock.New(rdb, "a")
	for name, f := range map[string]func(){
		"New no locks":        func() { multilock.New() },
		"NewQuorum no locks":  func() { multilock.NewQuorum() },
		"nil lock":            func() { multilock.New(a, nil) },
		"typed nil":           func() { multilock.New(a, (*rlock.Mutex)(nil)) },
		"same handle twice":   func() { multilock.New(a, a) },
		"quorum handle twice": func() { multilock.NewQuorum(a, a) },
		"same name":           func() { multilock.New(a, rlock.New(rdb, "a")) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.HasPrefix(s, "multilock: ") {
					t.Fatalf("panic %v, want a clear multilock message", r)
				}
			}()
			f()
		})
	}
	multilock.NewQuorum(a) // a quorum of one is a lock
}

// minis starts n miniredis servers, a client for each.
func minis(t *testing.T, n int) ([]*miniredis.Miniredis, []*redis.Client) {
	mrs, rdbs := make([]*miniredis.Miniredis, n), make([]*redis.Client, n)
	for i := range n {
		mrs[i], rdbs[i] = redistest.Mini(t)
	}
	return mrs, rdbs
}

func quorum(rdbs []*redis.Client, name string, opts ...rlock.Option) *multilock.Group {
	ls := make([]multilock.Locker, len(rdbs))
	for i, rdb := range rdbs {
		ls[i] = rlock.New(rdb, name, opts...)
	}
	return multilock.NewQuorum(ls...)
}

func TestQuorumMini(t *testing.T) {
	mrs, rdbs := minis(t, 3)
	ctx := t.Context()
	// Another client holds the lock on two of the three servers.
	a, b := rlock.New(rdbs[0], "q"), rlock.New(rdbs[1], "q")
	mustLock(t, a)
	mustLock(t, b)
	g := quorum(rdbs, "q")
	if ok, err := g.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock against a majority held elsewhere = %v, %v; want false, nil", ok, err)
	}
	perclient.AwaitTidied(ctx) // an attempt cut short gives back in the background
	if keys := mrs[2].Keys(); len(keys) != 0 {
		t.Fatalf("the free server keeps %v after a missed TryLock", keys)
	}
	mustUnlock(t, b)
	if ok, err := g.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock with two of three free = %v, %v", ok, err)
	}
	if redistest.Closed(g.Done()) {
		t.Fatal("Done closed while held")
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, a)
	for i, mr := range mrs {
		if keys := mr.Keys(); len(keys) != 0 {
			t.Fatalf("server %d keeps %v", i, keys)
		}
	}
}

func TestQuorumLockWokenByReleaseMini(t *testing.T) {
	for kind, newLock := range map[string]func(rdb *redis.Client, name string) multilock.Locker{
		"rlock":  func(rdb *redis.Client, name string) multilock.Locker { return rlock.New(rdb, name) },
		"rwlock": func(rdb *redis.Client, name string) multilock.Locker { return rwlock.New(rdb, name) },
	} {
		t.Run(kind, func(t *testing.T) {
			_, rdbs := minis(t, 3)
			ctx := t.Context()
			group := func() *multilock.Group {
				var ls []multilock.Locker
				for _, rdb := range rdbs {
					ls = append(ls, newLock(rdb, "w"))
				}
				return multilock.NewQuorum(ls...)
			}
			holder, g := group(), group()
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { got <- g.Lock(ctx) }()
			select {
			case err := <-got:
				t.Fatalf("Lock returned %v while another group holds every member", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			served(t, got, g)
		})
	}
}

func TestQuorumServersDownMini(t *testing.T) {
	mrs, rdbs := minis(t, 3)
	ctx := t.Context()
	g := quorum(rdbs, "d")
	mrs[2].Close()
	if ok, err := g.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock with two of three servers = %v, %v", ok, err)
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	mrs[1].Close()
	ok, err := g.TryLock(ctx)
	if ok || err == nil || !strings.HasPrefix(err.Error(), `multilock: lock ["d" "d" "d"]: `) {
		t.Fatalf("TryLock with one of three servers = %v, %v; want false and the servers' errors", ok, err)
	}
	if keys := mrs[0].Keys(); len(keys) != 0 {
		t.Fatalf("the live server keeps %v after a missed TryLock", keys)
	}
	lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := g.Lock(lctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last attempt") {
		t.Fatalf("Lock with one of three servers = %v, want the deadline and the last attempt's errors", err)
	}
}

func TestQuorumOfFairLocksMini(t *testing.T) {
	_, rdbs := minis(t, 3)
	ctx := t.Context()
	ls := func() []multilock.Locker {
		var ls []multilock.Locker
		for _, rdb := range rdbs {
			ls = append(ls, fairlock.New(rdb, "f"))
		}
		return ls
	}
	holder, g := multilock.NewQuorum(ls()...), multilock.NewQuorum(ls()...)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- g.Lock(ctx) }()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Fair locks do not announce releases to outsiders: the randomized
	// retry serves the waiting group.
	served(t, got, g)
}

func mustLock(t testing.TB, m multilock.Locker) {
	t.Helper()
	if err := m.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func mustUnlock(t testing.TB, m multilock.Locker) {
	t.Helper()
	if err := m.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// served waits for the Lock of g that reports to got, then unlocks g.
func served(t *testing.T, got <-chan error, g *multilock.Group) {
	t.Helper()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock not served 5s after the holder's Unlock")
	}
	if err := g.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A quorum that takes the free member and gives it back, round after
// round, is not woken by its own releases: while the majority stays held
// elsewhere it retries at the randomized delay, not in a busy loop.
func TestQuorumWaitDoesNotSpinMini(t *testing.T) {
	_, rdbs := minis(t, 3)
	a, b := rlock.New(rdbs[0], "spin"), rlock.New(rdbs[1], "spin")
	mustLock(t, a)
	mustLock(t, b)
	traffic := redistest.CountTraffic(rdbs[2])
	g := quorum(rdbs, "spin")
	const wait = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := g.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock against a majority held elsewhere = %v, want the deadline", err)
	}
	// A round costs the free member an acquire and a release; rounds come
	// at least RetryDelay/2 apart.
	if limit := 2 * (2*int64(wait/(100*time.Millisecond)) + 2); traffic.RoundTrips() > limit {
		t.Fatalf("%d round trips to the free member in %v, want at most %d", traffic.RoundTrips(), wait, limit)
	}
	mustUnlock(t, a)
	mustUnlock(t, b)
}

// An rlock announces a release on its shared channel only when a group
// watches it: an uncontended Unlock publishes nothing (a PUBLISH to
// nobody costs Redis a command on every one), and a quorum waiting on
// held members marks their holds, whose releases then wake it.
func TestQuorumWatchMarksHoldsMini(t *testing.T) {
	_, rdbs := minis(t, 3)
	ctx := t.Context()
	names := keyspace.NewNames("ann")
	subs := make([]*redis.PubSub, len(rdbs))
	for i, rdb := range rdbs {
		subs[i] = rdb.Subscribe(ctx, names.Channel())
		t.Cleanup(func() { subs[i].Close() })
		if _, err := subs[i].Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
	}
	quiet := rlock.New(rdbs[0], "ann")
	if err := quiet.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if msg := received(subs[0], 100*time.Millisecond); msg != nil {
		t.Fatalf("an unwatched release published %q", msg.Payload)
	}

	holder, g := quorum(rdbs, "ann"), quorum(rdbs, "ann")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- g.Lock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool {
		for _, rdb := range rdbs {
			if !rdb.HExists(ctx, names.Lock(), "@watched").Val() {
				return false
			}
		}
		return true
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		if msg := received(sub, 5*time.Second); msg == nil || msg.Payload != "1" {
			t.Fatalf("server %d: the release of a watched hold published %v, want \"1\"", i, msg)
		}
	}
	served(t, got, g)
}

// received returns the next message of sub, or nil when none comes
// within d.
func received(sub *redis.PubSub, d time.Duration) *redis.Message {
	select {
	case msg := <-sub.Channel():
		return msg
	case <-time.After(d):
		return nil
	}
}
