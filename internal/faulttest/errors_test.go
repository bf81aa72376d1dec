package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// A hold taken over (its lease ran out unseen, in a pause say, and
// another handle took the lock) is lost with an error that names the new
// holder's process, and for rwlock how it holds: the writer first.
func TestLossSaysWhoTookOver(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	lease := 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		// hold takes the lock with a handle whose loss is reported to
		// lost; take takes it with another handle, and returns its release.
		hold func(name string, lost func(error)) error
		take func(name string) (func(ctx context.Context) error, error)
		how  string
	}{
		{"rlock",
			func(name string, lost func(error)) error {
				return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease), rlock.WithOnLost(lost)).Lock(t.Context())
			},
			func(name string) (func(ctx context.Context) error, error) {
				m := rlock.New(rdb, name)
				return m.Unlock, m.Lock(t.Context())
			}, "held"},
		{"fairlock",
			func(name string, lost func(error)) error {
				return fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(lease), fairlock.WithOnLost(lost)).Lock(t.Context())
			},
			func(name string) (func(ctx context.Context) error, error) {
				m := fairlock.New(rdb, name)
				return m.Unlock, m.Lock(t.Context())
			}, "held"},
		{"rwlock writer",
			func(name string, lost func(error)) error {
				return rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithOnLost(lost)).Lock(t.Context())
			},
			func(name string) (func(ctx context.Context) error, error) {
				rw := rwlock.New(rdb, name)
				return rw.Unlock, rw.Lock(t.Context())
			}, "held for writing"},
		{"rwlock reader",
			func(name string, lost func(error)) error {
				return rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithOnLost(lost)).Lock(t.Context())
			},
			func(name string) (func(ctx context.Context) error, error) {
				rw := rwlock.New(rdb, name)
				return rw.RUnlock, rw.RLock(t.Context())
			}, "held for reading"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			lost := make(chan error, 1)
			if err := tc.hold(name, func(err error) { lost <- err }); err != nil {
				t.Fatal(err)
			}
			rdb.Del(t.Context(), mainKey(name)) // its lease ran out, as far as Redis knows
			release, err := tc.take(name)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := release(t.Context()); err != nil {
					t.Error(err)
				}
			}()
			select {
			case err := <-lost:
				want := fmt.Sprintf("lock lost: the lock was taken over: it is %s by pid %d on ", tc.how, os.Getpid())
				if !errors.Is(err, rlock.ErrLost) || !strings.Contains(err.Error(), want) {
					t.Fatalf("loss = %v; want ErrLost saying %q", err, want)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the hold taken over was not reported lost")
			}
		})
	}
}

// A Lock or RLock that waits behind a hold of its own handle, its ctx
// carrying no hold, waits (another goroutine's must); when its ctx ends,
// its error says what the handle holds and how to re-enter. One that
// waits behind another handle's hold gets no such hint.
func TestWaitBehindOwnHoldSaysSo(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	reentry := "this handle holds the lock: a call whose ctx carries no hold waits for its Unlock, " +
		"as a second sync.Mutex.Lock does; to re-enter, lock with the ctx that Do passes to fn"
	type (
		lock func(ctx context.Context) error
		side struct{ take, free lock }
	)
	for _, tc := range []struct {
		name string
		// sides returns how the first call takes and frees the lock, and
		// how the second does.
		sides func(name string) (first, second side)
		want  string // the hint after the ctx error; "": none
	}{
		{"rlock Lock then Lock", func(name string) (side, side) {
			m := rlock.New(rdb, name)
			return side{m.Lock, m.Unlock}, side{m.Lock, m.Unlock}
		}, reentry},
		{"fairlock Lock then Lock", func(name string) (side, side) {
			m := fairlock.New(rdb, name)
			return side{m.Lock, m.Unlock}, side{m.Lock, m.Unlock}
		}, reentry},
		{"rwlock Lock then Lock", func(name string) (side, side) {
			rw := rwlock.New(rdb, name)
			return side{rw.Lock, rw.Unlock}, side{rw.Lock, rw.Unlock}
		}, reentry},
		{"rwlock RLock then Lock", func(name string) (side, side) {
			rw := rwlock.New(rdb, name)
			return side{rw.RLock, rw.RUnlock}, side{rw.Lock, rw.Unlock}
		}, "this handle holds a read lock: a Lock waits for its RUnlock (a read hold cannot be upgraded)"},
		{"rwlock Lock then RLock", func(name string) (side, side) {
			rw := rwlock.New(rdb, name)
			return side{rw.Lock, rw.Unlock}, side{rw.RLock, rw.RUnlock}
		}, "this handle holds the write lock: an RLock whose ctx carries no hold waits for its Unlock; " +
			"to downgrade, call RLock with the ctx that Do passes to fn"},
		{"rlock Lock then another handle's Lock", func(name string) (side, side) {
			m, other := rlock.New(rdb, name), rlock.New(rdb, name)
			return side{m.Lock, m.Unlock}, side{other.Lock, other.Unlock}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, second := tc.sides(redistest.UniqueName(t))
			if err := first.take(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			err := second.take(ctx)
			cancel()
			switch {
			case !errors.Is(err, context.DeadlineExceeded),
				tc.want == "" && strings.Contains(fmt.Sprint(err), "this handle"),
				tc.want != "" && !strings.HasSuffix(fmt.Sprint(err), "context deadline exceeded: "+tc.want):
				t.Errorf("wait = %v; want the deadline, then %q", err, tc.want)
			}
			// Another goroutine's wait is not cut short: it holds once
			// the first hold is released.
			got := make(chan error, 1)
			go func() { got <- second.take(t.Context()) }()
			select {
			case err := <-got:
				t.Fatalf("a wait returned %v while the lock was held", err)
			case <-time.After(50 * time.Millisecond):
			}
			if err := first.free(t.Context()); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the wait did not hold after the release")
			}
			if err := second.free(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
