package faulttest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// fencedLocker is a locker whose holds carry fencing tokens.
type fencedLocker interface {
	locker
	// Token is the current hold's fencing token; 0 when none.
	Token() uint64
}

// fenceLease is the watchdog timeout of the fenced handles: the fencing
// counter lives that long after the last token.
const fenceLease = 3 * time.Second

// forEachFenced runs f as a subtest for every primitive with fencing
// tokens, and skips the others.
func forEachFenced(t *testing.T, f func(t *testing.T, p primitive)) {
	forEach(t, func(t *testing.T, p primitive) {
		if p.fenced == nil {
			t.Skip("no fencing tokens")
		}
		f(t, p)
	})
}

// Fault 3 with fencing: Redis loses its data (SHUTDOWN NOSAVE, restarted
// on the same port) and the next hold's token is above every token
// handed out before, though the counter is gone: a token is never below
// the server's clock in microseconds.
func TestFencingSurvivesDataLoss(t *testing.T) {
	forEachFenced(t, func(t *testing.T, p primitive) {
		ignore := goleak.IgnoreCurrent()
		// Registered first, so it runs after every other cleanup (servers,
		// clients) of the test.
		t.Cleanup(func() { redistest.VerifyNone(t, ignore) })
		srv := redistest.Start(t)
		name := redistest.UniqueName(t)
		before := takeFencedHolds(t, p, []redis.UniversalClient{srv.NewClient(t), srv.NewClient(t)}, name, 5, nil)

		srv.Shutdown()
		srv.Restart(t)
		rdb := srv.NewClient(t)
		if n := rdb.Exists(t.Context(), keyspace.NewNames(name).Fence()).Val(); n != 0 {
			t.Fatal("the fencing counter survived SHUTDOWN NOSAVE: no data was lost")
		}
		after := takeFencedHolds(t, p, []redis.UniversalClient{rdb, srv.NewClient(t)}, name, 1, nil)
		last := slices.Max(before)
		if after[0] <= last {
			t.Fatalf("token after the data loss %d, want above all five before it %v", after[0], before)
		}
		t.Logf("token after the data loss %d, %v above the last before it", after[0], time.Duration(after[0]-last)*time.Microsecond)
	})
}

// After Lock and Unlock with fencing, no key of the lock lives without an
// expiry: while a hold lasts with a waiter in line, and after the last
// release, when the fencing counter alone is left (one lease after the
// last token).
func TestFencedKeysExpire(t *testing.T) {
	forEachFenced(t, func(t *testing.T, p primitive) {
		srv := redistest.SharedServer(t)
		name := redistest.UniqueName(t)
		admin := srv.NewClient(t)
		whileWaiting := func() {
			if keys := keysWithoutExpiry(t, admin, name); len(keys) > 0 {
				t.Errorf("while held, with a waiter: keys without an expiry %v", keys)
			}
		}
		takeFencedHolds(t, p, []redis.UniversalClient{srv.NewClient(t), srv.NewClient(t)}, name, 3, whileWaiting)
		if keys := keysWithoutExpiry(t, admin, name); len(keys) > 0 {
			t.Fatalf("after the last release: keys without an expiry %v", keys)
		}
		fence := keyspace.NewNames(name).Fence()
		if ttl := admin.PTTL(t.Context(), fence).Val(); ttl <= 0 || ttl > fenceLease {
			t.Fatalf("the fencing counter's expiry %v, want one lease (%v) at most", ttl, fenceLease)
		}
	})
}

// takeFencedHolds takes n holds of the lock called name with fencing, one
// after the other, and returns their tokens, each checked to be above the
// one before. The first hold is taken by a handle on clients[0]; each
// next one by a new handle on the other client, parked behind the holder
// before it releases (so that, for a primitive whose releases grant, the
// release grants it the lock and its token). waiting, if set, runs while
// a holder holds and the next one waits.
func takeFencedHolds(t *testing.T, p primitive, clients []redis.UniversalClient, name string, n int, waiting func()) []uint64 {
	t.Helper()
	ctx := t.Context()
	parks := redistest.CountParks(t, clients...)
	holder := p.fenced(clients[0], name, fenceLease)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var tokens []uint64
	for i := range n {
		tok := holder.Token()
		if tok == 0 || len(tokens) > 0 && tok <= tokens[len(tokens)-1] {
			t.Fatalf("hold %d: token %d, want above the one before %v", i, tok, tokens)
		}
		tokens = append(tokens, tok)
		if i == n-1 {
			break
		}
		next := p.fenced(clients[(i+1)%len(clients)], name, fenceLease)
		locked := make(chan error, 1)
		go func() { locked <- next.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == int64(i+1) })
		if waiting != nil {
			waiting()
		}
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		holder = next
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// keysWithoutExpiry returns the keys of the primitive called name (every
// key contains the name in its hash tag) that have no expiry.
func keysWithoutExpiry(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	var bare []string
	iter := rdb.Scan(ctx, 0, "*{"+name+"}*", 100).Iterator()
	for iter.Next(ctx) {
		if rdb.PTTL(ctx, iter.Val()).Val() == -1 {
			bare = append(bare, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return bare
}

// fencedHold is a hold of the lock called name, with fencing, by a
// handle whose client reaches the shared server srv through proxy.
type fencedHold struct {
	srv    *redistest.Server
	name   string
	proxy  *redistest.Proxy
	holder fencedLocker
	token  uint64 // the hold's token
}

// holdFenced takes a fencedHold of p, under a name of the test's own.
func holdFenced(t *testing.T, p primitive) fencedHold {
	t.Helper()
	f := fencedHold{srv: redistest.SharedServer(t), name: redistest.UniqueName(t)}
	f.proxy = redistest.NewProxy(t, f.srv.Addr())
	f.holder = p.fenced(f.proxy.NewClient(t), f.name, fenceLease)
	if err := f.holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.token = f.holder.Token()
	return f
}

// A handle that gave its hold up as lost (its renewals stalled past its
// local validity) while the hold still stood in Redis finds that hold on
// its next Lock and adopts it: the adopted hold carries a new token, above
// the one given up, so that a step still under way under the abandoned
// hold (which carries the old token) is refused by a fenced resource once
// the new hold has used its token.
func TestFencedReadoptionTakesNewToken(t *testing.T) {
	forEachFenced(t, func(t *testing.T, p primitive) {
		f := holdFenced(t, p)
		admin := f.srv.NewClient(t)

		f.proxy.Stall()
		redistest.WaitFor(t, 2*fenceLease, func() bool { return isClosed(f.holder.Done()) })
		// Keep the hold standing in Redis past the handle's giving up, as a
		// server whose clock runs slow would: the next Lock must find it.
		lock := keyspace.NewNames(f.name).Lock()
		if !admin.PExpire(t.Context(), lock, time.Minute).Val() {
			t.Fatal("the hold was gone from Redis when the handle gave it up: nothing to adopt")
		}
		f.proxy.Resume()

		if err := f.holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if again := f.holder.Token(); again <= f.token {
			t.Fatalf("token of the adopted hold %d, want above the one given up (%d)", again, f.token)
		}
		if err := f.holder.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p.held(t.Context(), admin, f.name) {
			t.Fatal("the lock is still held after the adopted hold's Unlock")
		}
	})
}

// An Unlock that fails (its release never reached Redis, and its caller
// gave up) ends the handle's hold all the same, while the hold stands in
// Redis until its lease runs out. The handle's next Lock finds that hold
// and adopts it: a new hold for the caller, with a new token.
func TestFencedAfterFailedUnlockTakesNewToken(t *testing.T) {
	releases := map[string]string{"rlock": "rlock_unlock.lua", "fairlock": "fairlock_unlock.lua", "rwlock": "rwlock_writeunlock.lua"}
	forEachFenced(t, func(t *testing.T, p primitive) {
		f := holdFenced(t, p)

		held := f.proxy.Hold(scriptOn(t, releases[p.name], f.name))
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		err := f.holder.Unlock(ctx)
		cancel()
		if err == nil {
			t.Fatal("Unlock succeeded though its release was held back")
		}
		select {
		case <-held.Caught():
		default:
			t.Fatal("the release was not held back: the fault was not injected")
		}
		if !p.held(t.Context(), f.srv.NewClient(t), f.name) {
			t.Fatal("the hold is gone from Redis: nothing to adopt")
		}

		if err := f.holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if again := f.holder.Token(); again <= f.token {
			t.Fatalf("token of the adopted hold %d, want above the one before the failed Unlock (%d)", again, f.token)
		}
		if err := f.holder.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
