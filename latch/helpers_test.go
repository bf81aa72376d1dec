package latch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/latch"
)

// Checks shared by the unit, integration and cluster tiers.

// wantReturned waits for n waiters started by startWaiters to return nil,
// each within the bound; what names what should have woken them.
func wantReturned(t *testing.T, waited <-chan error, n int, within time.Duration, what string) {
	t.Helper()
	for range n {
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(within):
			t.Fatalf("a waiter was not woken by %s", what)
		}
	}
}

// semantics walks a latch through its life: set, TrySetCount refused
// while set, count down to zero (the key goes), CountDown at zero does
// nothing, Delete.
func semantics(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	l := latch.New(rdb, name)
	wantCount(t, l, 0)
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait on a latch never set = %v", err)
	}
	mustSet(t, l, 3)
	if ok, err := l.TrySetCount(ctx, 5); ok || err != nil {
		t.Fatalf("TrySetCount on a set latch = %v, %v; want false", ok, err)
	}
	wantCount(t, l, 3)
	mustCountDown(t, l)
	mustCountDown(t, l)
	wantCount(t, l, 1)
	mustCountDown(t, l)
	wantCount(t, l, 0)
	wantNoCount(t, rdb, name)
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait at zero = %v", err)
	}
	// At zero: CountDown does nothing and leaves nothing.
	mustCountDown(t, l)
	wantNoCount(t, rdb, name)

	mustSet(t, l, 4)
	if ok, err := l.Delete(ctx); !ok || err != nil {
		t.Fatalf("Delete = %v, %v; want true", ok, err)
	}
	wantNoCount(t, rdb, name)
	if ok, err := l.Delete(ctx); ok || err != nil {
		t.Fatalf("Delete at zero = %v, %v; want false", ok, err)
	}
	wantNoCount(t, rdb, name)
}

// badInput: counts not above zero, and a latch key holding something
// else, are clear errors that change nothing.
func badInput(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	l := latch.New(rdb, name)
	for _, n := range []int64{0, -1} {
		if ok, err := l.TrySetCount(ctx, n); ok || !errors.Is(err, latch.ErrNonPositiveCount) {
			t.Errorf("TrySetCount(%d) = %v, %v; want ErrNonPositiveCount", n, ok, err)
		}
	}
	wantNoCount(t, rdb, name)
	// A count above 2^53 - 1, which the scripts' numbers do not hold
	// exactly, is refused; 2^53 - 1 itself counts down exactly.
	const maxCount = 1<<53 - 1
	ok, err := l.TrySetCount(ctx, maxCount+1)
	want := fmt.Sprintf("latch: try set count %q: number out of range: count 9007199254740992 is beyond 2^53 - 1", name)
	if ok || !errors.Is(err, latch.ErrOutOfRange) || !strings.HasPrefix(fmt.Sprint(err), want) {
		t.Errorf("TrySetCount(2^53) = %v, %v; want %q... matching ErrOutOfRange", ok, err, want)
	}
	wantNoCount(t, rdb, name)
	mustSet(t, l, maxCount)
	mustCountDown(t, l)
	wantCount(t, l, maxCount-1)
	if _, err := l.Delete(ctx); err != nil {
		t.Fatal(err)
	}

	key := keyspace.NewNames(name).Latch()
	for _, put := range []struct {
		what string
		set  func() error
		same func() bool
	}{
		{"a hash", func() error { return rdb.HSet(ctx, key, "f", "v").Err() },
			func() bool { return rdb.HGet(ctx, key, "f").Val() == "v" }},
		{"a word", func() error { return rdb.Set(ctx, key, "abc", 0).Err() },
			func() bool { return rdb.Get(ctx, key).Val() == "abc" }},
		{"a zero", func() error { return rdb.Set(ctx, key, "0", 0).Err() },
			func() bool { return rdb.Get(ctx, key).Val() == "0" }},
		{"a negative", func() error { return rdb.Set(ctx, key, "-2", 0).Err() },
			func() bool { return rdb.Get(ctx, key).Val() == "-2" }},
	} {
		if err := put.set(); err != nil {
			t.Fatal(err)
		}
		_, setErr := l.TrySetCount(ctx, 2)
		_, countErr := l.Count(ctx)
		_, deleteErr := l.Delete(ctx)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		waitErr := l.Wait(wctx)
		cancel()
		for op, err := range map[string]error{
			"TrySetCount": setErr,
			"CountDown":   l.CountDown(ctx),
			"Count":       countErr,
			"Delete":      deleteErr,
			"Wait":        waitErr,
		} {
			if !errors.Is(err, latch.ErrWrongType) || !strings.Contains(err.Error(), key) ||
				strings.Contains(err.Error(), "script") || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on %s = %v; want ErrWrongType naming %s, without a script id", op, put.what, err, key)
			}
		}
		if !put.same() {
			t.Errorf("%s was changed", put.what)
		}
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func mustSet(t *testing.T, l *latch.Latch, n int64) {
	t.Helper()
	if ok, err := l.TrySetCount(t.Context(), n); !ok || err != nil {
		t.Fatalf("TrySetCount(%d) = %v, %v; want true", n, ok, err)
	}
}

func mustCountDown(t *testing.T, l *latch.Latch) {
	t.Helper()
	if err := l.CountDown(t.Context()); err != nil {
		t.Error(err)
	}
}

func wantCount(t *testing.T, l *latch.Latch, want int64) {
	t.Helper()
	if n, err := l.Count(t.Context()); n != want || err != nil {
		t.Fatalf("Count = %d, %v; want %d", n, err, want)
	}
}

// wantNoCount fails t if the latch's count key exists: a latch at zero
// does not exist in Redis. (Receipts may remain; they expire.)
func wantNoCount(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	if n, err := rdb.Exists(t.Context(), keyspace.NewNames(name).Latch()).Result(); n != 0 || err != nil {
		t.Fatalf("the count key exists at zero (%d, %v)", n, err)
	}
}
