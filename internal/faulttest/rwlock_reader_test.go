package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A reader against a writer: the suite's faults on the read side of the
// read-write lock, whose holds have their own lease (a timeout key per
// reader) kept alive by the same watchdog entry as the handle's write
// holds. The suite's locker is exclusive, so readers are not a primitive
// of it; these cases follow faults 2 (stall), 6 (lost replies) and the
// failed unlock, each with a writer waiting on the reader.

// writerGetsIn reports whether a new writer can take the lock at once; it
// gives the lock back when it could.
func writerGetsIn(t *testing.T, rdb redis.UniversalClient, name string) bool {
	t.Helper()
	w := rwlock.New(rdb, name)
	ok, err := w.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		if err := w.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return ok
}

// readerBehindProxy returns a reader holding a new lock with lease through
// a fault proxy to the shared server.
func readerBehindProxy(t *testing.T, lease time.Duration) (*redistest.Server, *redistest.Proxy, string, *rwlock.RWMutex) {
	t.Helper()
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	reader := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease))
	if err := reader.RLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv, proxy, name, reader
}

// A reader cut off from Redis for longer than its lease learns that its
// hold is lost before a waiting writer gets the lock.
func TestRWLockStalledReaderLearnsFirst(t *testing.T) {
	const lease = time.Second
	srv, proxy, name, reader := readerBehindProxy(t, lease)
	writer := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease))

	proxy.Stall()
	stalled := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := writer.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stalled)
	if !redistest.Closed(reader.Done()) {
		t.Fatal("a writer acquired while the stalled reader's Done was still open")
	}
	t.Logf("the writer acquired %v after the stall began", took.Round(time.Millisecond))
	if took < lease*2/3-50*time.Millisecond || took > lease+time.Second {
		t.Errorf("the writer acquired %v after the stall, want between 2/3 of the lease and lease + 1s", took)
	}

	proxy.Resume()
	if err := reader.RUnlock(t.Context()); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Errorf("stale reader's RUnlock after the stall = %v, want ErrNotHeld", err)
	}
	if writerGetsIn(t, srv.NewClient(t), name) {
		t.Fatal("the stale reader's RUnlock released the writer's lock")
	}
	if err := writer.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A reader whose last RUnlock fails stops renewing its lease: a waiting
// writer gets the lock within the lease, even with Redis reachable again
// at once.
func TestRWLockFailedRUnlockStopsRenewal(t *testing.T) {
	const lease = time.Second
	srv, proxy, name, reader := readerBehindProxy(t, lease)
	proxy.Refuse(true)
	proxy.Cut()
	failed := time.Now()
	if err := reader.RUnlock(t.Context()); err == nil {
		t.Fatal("RUnlock through a refusing proxy succeeded")
	}
	if !redistest.Closed(reader.Done()) {
		t.Error("Done still open after the last RUnlock failed")
	}
	proxy.Refuse(false)

	ctx, cancel := context.WithTimeout(t.Context(), lease+3*time.Second)
	defer cancel()
	writer := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease))
	if err := writer.Lock(ctx); err != nil {
		t.Fatalf("the read lock of a failed RUnlock never freed: %v", err)
	}
	if d := time.Since(failed); d > lease+time.Second {
		t.Errorf("the read lock freed %v after the failed RUnlock, want within the lease", d)
	}
	if err := writer.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The reply of a reader's acquire or release is lost after Redis ran the
// script: the handle's readers share its hold's one read level, the last
// RUnlock releases it, and a failed TryRLock leaves nothing that would
// keep a writer out.
func TestRWLockReaderLostReplies(t *testing.T) {
	const lease = 30 * time.Second // no renewal runs during a case
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	retrying := proxy.NewClient(t)
	single := proxy.NewClient(t, func(o *redis.Options) { o.MaxRetries = -1 })
	// lostReply runs call while the proxy drops the reply of the first
	// script run on the lock called name, and returns call's error.
	lostReply := func(t *testing.T, name string, call func() error) error {
		t.Helper()
		dropped := proxy.DropReply(func(args []string) bool { return redistest.IsScriptCall(args, mainKey(name)) })
		err := call()
		if !redistest.Closed(dropped) {
			t.Fatal("the proxy dropped no reply: the fault was not injected")
		}
		return err
	}

	for _, tc := range []struct {
		name string
		rdb  *redis.Client
	}{{"retries on", retrying}, {"retries off", single}} {
		t.Run("rlock/"+tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			r := rwlock.New(tc.rdb, name, rwlock.WithWatchdogTimeout(lease))
			if err := lostReply(t, name, func() error { return r.RLock(t.Context()) }); err != nil {
				t.Fatalf("RLock with a lost reply: %v", err)
			}
			if err := r.RUnlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !writerGetsIn(t, direct, name) {
				t.Fatal("one RUnlock after one RLock left a read hold: the retried acquire added one")
			}
		})
		t.Run("runlock/"+tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			r := rwlock.New(tc.rdb, name, rwlock.WithWatchdogTimeout(lease))
			for range 2 {
				if err := r.RLock(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			// The first RUnlock counts down in the process: the hold's
			// one read level stays for the second reader.
			if err := r.RUnlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if writerGetsIn(t, direct, name) {
				t.Fatal("the first of two RUnlocks released the hold's read level")
			}
			if err := lostReply(t, name, func() error { return r.RUnlock(t.Context()) }); err != nil {
				t.Fatalf("last RUnlock with a lost reply: %v", err)
			}
			if !redistest.Closed(r.Done()) || !writerGetsIn(t, direct, name) {
				t.Fatal("the read lock is still held after two RUnlocks of two RLocks")
			}
		})
	}

	t.Run("try rlock, retries off", func(t *testing.T) {
		name := redistest.UniqueName(t)
		r := rwlock.New(single, name, rwlock.WithWatchdogTimeout(lease))
		var got bool
		err := lostReply(t, name, func() (err error) {
			got, err = r.TryRLock(t.Context())
			return err
		})
		if err == nil || got {
			t.Fatalf("TryRLock with a lost reply and no retries = %v, %v; want an error", got, err)
		}
		if !writerGetsIn(t, direct, name) {
			t.Fatal("a failed TryRLock left a read hold behind")
		}
	})
}
