package faulttest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A hold's read level can be taken again under the hold's id: a write
// hold downgrades, releases that read, and downgrades again. Each read
// level is tagged with the attempt that took it, and its release and
// give-backs name the tag, so that a late copy of one of them never
// removes a later read level of the hold (defect D2).

// readFields returns the read fields of the lock called name: field ->
// tag.
func readFields(ctx context.Context, rdb *redis.Client, name string) map[string]string {
	reads := map[string]string{}
	for f, v := range rdb.HGetAll(ctx, keyspace.NewNames(name).Lock()).Val() {
		if strings.HasPrefix(f, "r:") {
			reads[f] = v
		}
	}
	return reads
}

// lateRead is a handle of a lock whose connection goes through the
// proxy, with a read timeout that gives a held-up copy up well inside the
// request's window, and another handle of the lock on a direct client.
type lateRead struct {
	rw, other *rwlock.RWMutex
	direct    *redis.Client
	proxy     *redistest.Proxy
	name      string
}

func newLateRead(t *testing.T) lateRead {
	direct, proxy, _ := redistest.ProxiedServer(t)
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = time.Second })
	name := redistest.UniqueName(t)
	return lateRead{rwlock.New(via, name), rwlock.New(direct, name), direct, proxy, name}
}

// mustHeld fails t unless held caught a copy within 10 seconds.
func mustHeld(t *testing.T, held *redistest.Held, what string) {
	t.Helper()
	select {
	case <-held.Caught():
	case <-time.After(10 * time.Second):
		t.Fatal(what + ": no copy was held: the fault was not injected")
	}
}

// TestLateReadReleaseSparesReadTakenAgain: the RUnlock of a downgraded
// read loses its first copy in the network (the client gives up on it and
// sends it again, which releases the level); the handle downgrades again,
// taking the read level anew under the same hold id; then Redis runs the
// first copy. Before read levels had tags, that copy removed the new read
// level: the handle read with no read lock in Redis, and a writer of
// another handle got in.
func TestLateReadReleaseSparesReadTakenAgain(t *testing.T) {
	l := newLateRead(t)
	rw, other, direct, proxy, name := l.rw, l.other, l.direct, l.proxy, l.name
	ctx := t.Context()

	err := rw.Do(ctx, func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil { // the first downgrade
			return err
		}
		held := proxy.Hold(scriptOn(t, "rwlock_readunlock.lua", name))
		if err := rw.RUnlock(ctx); err != nil {
			t.Errorf("RUnlock whose first copy was held up: %v", err)
		}
		mustHeld(t, held, "the downgraded read's RUnlock")
		if err := rw.RLock(ctx); err != nil { // taken again under the hold's id
			return err
		}
		before := readFields(ctx, direct, name)
		reply, err := held.Deliver(ctx)
		if err != nil {
			t.Fatalf("delivering the late copy: %v", err)
		}
		if after := readFields(ctx, direct, name); len(after) != 1 || len(before) != 1 {
			t.Errorf("the late copy of the first RUnlock (reply %q) left read fields %v, had %v: want the read level taken again", reply, after, before)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	// The handle reads on, under the read level taken again.
	if ok, err := other.TryLock(ctx); err != nil || ok {
		if ok {
			_ = other.Unlock(ctx)
		}
		t.Fatalf("another handle's write TryLock while the handle reads: %v %v, want refused", ok, err)
	}
	if err := rw.RUnlock(ctx); err != nil {
		t.Fatalf("RUnlock of the read taken again: %v", err)
	}
	if ok, err := other.TryLock(ctx); err != nil || !ok {
		t.Fatalf("another handle's write TryLock after the last RUnlock: %v %v, want the lock", ok, err)
	}
	_ = other.Unlock(ctx)
}

// TestStalledDowngradeIsGivenBackAgain: a downgrade whose first copy is
// held up in the network gets an unknown outcome and is given back; the
// handle's read (taken by the resend) is released; then Redis runs the
// held-up copy, within its deadline, which takes a read level under the
// write hold that no call of the handle counts. It was renewed with the
// write hold for as long as that lasted, and stood a lease after it: the
// attempt's second give-back, once no copy of it can run any more, names
// the attempt's tag and removes it, and no later read level.
func TestStalledDowngradeIsGivenBackAgain(t *testing.T) {
	l := newLateRead(t)
	rw, other, direct, proxy, name := l.rw, l.other, l.direct, l.proxy, l.name
	ctx := t.Context()

	err := rw.Do(ctx, func(ctx context.Context) error {
		held := proxy.Hold(scriptOn(t, "rwlock_readlock.lua", name))
		sent := time.Now()
		if err := rw.RLock(ctx); err != nil {
			t.Logf("the downgrade whose first copy was held up: %v", err)
		} else if err := rw.RUnlock(ctx); err != nil {
			t.Errorf("RUnlock of the downgrade: %v", err)
		}
		mustHeld(t, held, "the downgrade")
		if reply, err := held.Deliver(ctx); err != nil || !strings.HasPrefix(reply, "*3") {
			t.Fatalf("the late copy of the downgrade = %q, %v; want it to take a read level", reply, err)
		}
		if reads := readFields(ctx, direct, name); len(reads) != 1 {
			t.Fatalf("read fields after the late copy: %v, want its read level", reads)
		}
		// The write hold goes on, renewed, past every copy's deadline.
		redistest.WaitFor(t, exactly.RequestWindow+5*time.Second, func() bool {
			return len(readFields(ctx, direct, name)) == 0
		})
		if time.Since(sent) < exactly.RequestWindow {
			t.Errorf("the late copy's read level was removed after %v, before its deadline", time.Since(sent))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if ok, err := other.TryLock(ctx); err != nil || !ok {
		t.Fatalf("another handle's write TryLock after Do: %v %v, want the lock", ok, err)
	}
	_ = other.Unlock(ctx)
}
