package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// waits are the blocking acquires of every primitive, with the text that
// starts their errors.
func waits(rdb redis.UniversalClient, name string) []struct {
	op   string
	wait func(ctx context.Context) error
} {
	return []struct {
		op   string
		wait func(ctx context.Context) error
	}{
		{fmt.Sprintf("rlock: lock %q", name), rlock.New(rdb, name).Lock},
		{fmt.Sprintf("fairlock: lock %q", name), fairlock.New(rdb, name).Lock},
		{fmt.Sprintf("rwlock: lock %q", name), rwlock.New(rdb, name).Lock},
		{fmt.Sprintf("rwlock: rlock %q", name), rwlock.New(rdb, name).RLock},
		{fmt.Sprintf("semaphore: acquire %q", name), func(ctx context.Context) error { return semaphore.New(rdb, name).Acquire(ctx, 1) }},
		{fmt.Sprintf("semaphore: acquire %q", name), func(ctx context.Context) error {
			_, err := semaphore.NewLeased(rdb, name).Acquire(ctx, 0)
			return err
		}},
	}
}

// A wait that Redis being unreachable makes fail says so: the ctx error
// wraps the connection error. (go-redis reports a refused connection only
// after its own dial retries, about 1.7s: a wait shorter than that sees no
// Redis error to report.)
func TestWaitErrorSaysRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(t)
	srv.Stop()
	var wg sync.WaitGroup
	for _, w := range waits(rdb, redistest.UniqueName(t)) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			err := w.wait(ctx)
			cancel()
			want := w.op + ": context deadline exceeded (last attempt: "
			if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(fmt.Sprint(err), want) || !strings.Contains(fmt.Sprint(err), "connection refused") {
				t.Errorf("wait with Redis down = %v, want %q... connection refused", err, want)
			}
		})
	}
	wg.Wait()
}

// A semaphore that was never given permits says so when its wait ends.
func TestWaitErrorSaysNoPermits(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	for _, w := range waits(rdb, redistest.UniqueName(t))[4:] {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := w.wait(ctx)
		cancel()
		want := w.op + ": context deadline exceeded: no permits set: call SetPermits or TrySetPermits"
		if !errors.Is(err, context.DeadlineExceeded) || fmt.Sprint(err) != want {
			t.Errorf("wait on a semaphore without permits = %v, want %q", err, want)
		}
	}
}

// A name another structure uses is a wrong-type error that names the key
// and carries no Lua script id.
func TestWrongTypeErrorText(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	key := mainKey(name)
	if err := rdb.LPush(t.Context(), key, "x").Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range waits(rdb, name) {
		err := w.wait(t.Context())
		text := fmt.Sprint(err)
		want := fmt.Sprintf("%s: name holds a value of another kind: key %q", w.op, key)
		if !errors.Is(err, rlock.ErrWrongType) || !strings.HasPrefix(text, want) || strings.Contains(text, "script") {
			t.Errorf("wait on a list = %v, want %q and no script id", err, want)
		}
	}
	if n, _ := rdb.LLen(t.Context(), key).Result(); n != 1 {
		t.Fatalf("the list has %d elements, want it untouched", n)
	}
	rdb.Del(t.Context(), key)
}

// rwlock's Unlock by a handle that holds only a read lock points to
// RUnlock.
func TestUnlockOfAReadHoldPointsToRUnlock(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	rw := rwlock.New(rdb, name)
	if err := rw.RLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := rw.Unlock(t.Context())
	want := fmt.Sprintf("rwlock: unlock %q: lock not held: the handle holds a read lock: release it with RUnlock", name)
	if !errors.Is(err, rwlock.ErrNotHeld) || fmt.Sprint(err) != want {
		t.Errorf("Unlock of a read hold = %v, want %q", err, want)
	}
	if err := rw.RUnlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}
