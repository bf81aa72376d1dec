package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// The faults of a grant (internal/hold): its message lost, its waiter's
// ctx ending while it is in flight. Waiters killed at the head of the
// line are in dead_waiters_test.go; a lost reply of a release that grants
// is a row of the lost-reply table (grantingUnlockRow).

// parked waits until want waiters of the lock called name stand in line
// with their own channels subscribed, and returns the line.
func parked(t *testing.T, rdb redis.UniversalClient, name string, want int) []string {
	t.Helper()
	n := keyspace.NewNames(name)
	var line []string
	redistest.WaitFor(t, 10*time.Second, func() bool {
		line = rdb.LRange(t.Context(), n.Queue(), 0, -1).Val()
		if len(line) != want {
			return false
		}
		for _, owner := range line {
			if redistest.NumSub(t, rdb, n.WaiterChannel(owner)) != 1 {
				return false
			}
		}
		return true
	})
	return line
}

// lockAsync runs l.Lock(ctx) and reports its error and when it returned.
func lockAsync(ctx context.Context, l locker) <-chan lockResult {
	got := make(chan lockResult, 1)
	go func() {
		err := l.Lock(ctx)
		got <- lockResult{err, time.Now()}
	}()
	return got
}

type lockResult struct {
	err error
	at  time.Time
}

// heldAt waits up to limit for a Lock started by lockAsync to hold, and
// returns when it did; who names the waiter if it fails or times out.
func heldAt(t *testing.T, got <-chan lockResult, limit time.Duration, who string) time.Time {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("%s: %v", who, r.err)
		}
		return r.at
	case <-time.After(limit):
		t.Fatalf("%s did not hold the lock within %v", who, limit)
		return time.Time{}
	}
}

// A grant whose message is lost (every pub/sub connection killed just
// before the release) still reaches its waiter within a second: the
// hub's reconnect wakes it, and its attempt finds the lock granted.
func TestGrantMessageLost(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		srv := redistest.Start(t) // its own server: the kill hits nobody else
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		holder := p.new(srv.NewClient(t), name, 30*time.Second)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		waiter := p.new(srv.NewClient(t), name, 30*time.Second)
		got := lockAsync(t.Context(), waiter)
		line := parked(t, admin, name, 1)
		if err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		subs := redistest.NumSub(t, admin, keyspace.NewNames(name).WaiterChannel(line[0]))
		released := time.Now()
		if err := holder.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		took := heldAt(t, got, 10*time.Second, "the waiter granted the lock").Sub(released)
		t.Logf("waiter held %v after the release (its channel had %d subscribers then)", took.Round(time.Millisecond), subs)
		if took > time.Second {
			t.Errorf("waiter held %v after the release, want within 1s", took)
		}
		if err := waiter.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// helperWait waits for the lock, writes "held" if it gets it and then
// waits for its input to end. Tests SIGKILL it while it waits.
func helperWait(ctx context.Context, args []string, in <-chan string) error {
	p, rdb, name, lease, err := parseHelperArgs(args)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := p.new(rdb, name, lease).Lock(ctx); err != nil {
		return err
	}
	fmt.Println("held")
	for range in {
	}
	return nil
}

// A waiter whose ctx ends races the release that grants it the lock:
// either it completes the grant first (and then unlocks), or it gives up,
// before the grant or with the grant in flight (given back). Either way
// the waiter behind it holds the lock at once, and nobody holds it twice.
func TestGrantToCancelledWaiter(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		srv := redistest.SharedServer(t)
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		const lease = 30 * time.Second
		holder := p.new(srv.NewClient(t), name, lease)
		var held, gaveUp int
		for range 15 {
			if err := holder.Lock(t.Context()); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(t.Context())
			waiter := p.new(srv.NewClient(t), name, lease)
			w := lockAsync(wctx, waiter)
			parked(t, admin, name, 1)
			next := p.new(srv.NewClient(t), name, lease)
			x := lockAsync(t.Context(), next)
			parked(t, admin, name, 2)
			go cancel()
			if err := holder.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := <-w
			switch {
			case r.err == nil:
				held++
				if err := waiter.Unlock(t.Context()); err != nil {
					t.Fatal(err)
				}
			case errors.Is(r.err, context.Canceled):
				gaveUp++
			default:
				t.Fatalf("cancelled waiter's Lock = %v", r.err)
			}
			select {
			case r := <-x:
				if r.err != nil {
					t.Fatal(r.err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the waiter behind the cancelled one did not get the lock within 2s")
			}
			if v := redistest.Holders(t.Context(), admin, mainKey(name)); len(v) != 1 {
				t.Fatalf("lock hash while the next waiter holds = %v, want it alone", v)
			}
			if err := next.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("cancelled waiter held first %d times, gave up %d times", held, gaveUp)
	})
}

// A grant in flight when its waiter's ctx ends, made certain: the
// waiter's pub/sub connection is killed just before the release, so the
// grant is in Redis but its message lost, and the waiter's ctx ends
// before the hub reconnects. The waiter returns ctx's error; its leave
// finds the grant and gives it back (once the leave's reply is read, no
// later Lock of the handle can have begun), which passes the lock to the
// waiter behind it at once.
func TestGrantInFlightWhenCtxEnds(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		srv := redistest.Start(t) // its own server: the kill hits nobody else
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		const lease = 30 * time.Second
		holder := p.new(srv.NewClient(t), name, lease)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		waiterName := "grant-waiter-" + name
		proxy := redistest.NewProxy(t, srv.Addr())
		w := lockAsync(wctx, p.new(proxy.NewClient(t, func(o *redis.Options) { o.ClientName = waiterName }), name, lease))
		line := parked(t, admin, name, 1)
		next := p.new(srv.NewClient(t), name, lease)
		x := lockAsync(t.Context(), next)
		parked(t, admin, name, 2)
		// Only the first waiter's pub/sub connection is down, until its
		// ctx has ended.
		var err error
		var granted string
		whilePubSubDown(t, admin, proxy, waiterName, func() {
			err = holder.Unlock(t.Context())
			granted = redistest.HeldBy(t.Context(), admin, mainKey(name), line[0])
			cancel()
		})
		if err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		if r := <-w; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the cancelled waiter's Lock = %v, want context.Canceled", r.err)
		}
		if granted != "1" {
			t.Fatalf("the release did not grant the lock to the first waiter (its level %q)", granted)
		}
		d := heldAt(t, x, 10*time.Second, "the next waiter, given the grant back").Sub(released)
		t.Logf("the next waiter held %v after the cancelled waiter returned", d.Round(time.Millisecond))
		if d > time.Second {
			t.Errorf("the next waiter held %v after the grant was given back, want within 1s", d)
		}
		if v := redistest.Holders(t.Context(), admin, mainKey(name)); len(v) != 1 || redistest.HeldBy(t.Context(), admin, mainKey(name), line[0]) != "" {
			t.Fatalf("lock hash = %v, want the next waiter alone", v)
		}
		if err := next.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// whilePubSubDown kills the pub/sub connection of the client called name,
// which reaches the server through proxy, and runs fn before it can come
// back: the proxy refuses new connections until fn returns. A message
// published meanwhile is lost for good (a resubscription before it would
// bring it after all).
func whilePubSubDown(t *testing.T, admin *redis.Client, proxy *redistest.Proxy, name string, fn func()) {
	t.Helper()
	proxy.Refuse(true)
	defer proxy.Refuse(false)
	killPubSub(t, admin, name)
	fn()
}

// killPubSub kills the pub/sub connection of the client called name.
func killPubSub(t *testing.T, admin *redis.Client, name string) {
	t.Helper()
	list, err := admin.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(list) {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "name="+name) || slices.Contains(fields, "sub=0") {
			continue
		}
		id, _ := strings.CutPrefix(fields[0], "id=")
		if err := admin.ClientKillByFilter(t.Context(), "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no pub/sub connection named %q in %s", name, list)
}

// When the grantee is a handle of the releasing process's client, the
// release's reply hands it the lock (the in-process handoff; for rlock, a
// pass before the release is sent): it holds even though the grant's
// message is lost and its pub/sub connection cannot come back (the proxy
// refuses new connections until it holds).
func TestInProcessHandoff(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		srv := redistest.Start(t) // its own server: the kill hits nobody else
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		clientName := "in-process-" + name
		proxy := redistest.NewProxy(t, srv.Addr())
		rdb := proxy.NewClient(t, func(o *redis.Options) { o.ClientName = clientName })
		holder := p.new(rdb, name, 30*time.Second)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		waiter := p.new(rdb, name, 30*time.Second)
		got := lockAsync(t.Context(), waiter)
		parked(t, admin, name, 1)
		// Idle connections in the pool for the release and the keeper,
		// which must not need a new one while the proxy refuses them.
		warmPool(t, rdb, 4)
		// The keeper's next round is held back (its refresh of the
		// waiter's place: GETEX, or ZADD for a fair lock's line): run
		// after the release, it would find the place gone and have the
		// waiter attempt, perhaps before it took the grant it was
		// handed. Any attempt of the waiter is held back too: it must
		// hold without one.
		proxy.Hold(func(args []string) bool {
			return strings.EqualFold(args[0], "GETEX") || strings.EqualFold(args[0], "ZADD")
		})
		attempt := proxy.Hold(redistest.ScriptCall(t, p.name+"_acquire.lua", p.key(name)))
		var r lockResult
		whilePubSubDown(t, admin, proxy, clientName, func() {
			if err := holder.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			select {
			case r = <-got:
			case <-attempt.Caught():
				t.Fatal("the waiter attempted after the release: not handed over in process")
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter did not hold within 5s of the release, its pub/sub connection down")
			}
		})
		if r.err != nil {
			t.Fatal(r.err)
		}
		if err := waiter.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// warmPool leaves n idle connections in rdb's pool.
func warmPool(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = rdb.Conn()
		if err := conns[i].Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
}
