package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Unit tier: miniredis, with time advanced by FastForward.

func TestReentrancyMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	a := rlock.New(rdb, "r")
	b := rlock.New(rdb, "r")
	err := a.Do(t.Context(), func(ctx context.Context) error {
		mustLockCtx(t, ctx, a)
		if n, err := a.HoldCount(ctx); err != nil || n != 2 {
			t.Fatalf("HoldCount = %d, %v; want 2", n, err)
		}
		if n, _ := a.HoldCount(t.Context()); n != 0 {
			t.Fatalf("HoldCount without the hold's ctx = %d, want 0 (no plain hold)", n)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("other handle TryLock = %v, %v while held once", ok, err)
		}
		if err := b.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
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
	if err := a.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after release = %v, want ErrNotHeld", err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after release = %v, %v", ok, err)
	}
	mustUnlock(t, b)
}

func mustLockCtx(t testing.TB, ctx context.Context, m *rlock.Mutex) {
	t.Helper()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseExpiryMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	a := rlock.New(rdb, "lease", rlock.WithLeaseTime(time.Minute))
	b := rlock.New(rdb, "lease")
	mustLock(t, a)
	if ttl, _ := a.TTL(ctx); ttl <= 59*time.Second || ttl > time.Minute {
		t.Fatalf("TTL = %v, want about 1m", ttl)
	}
	mr.FastForward(61 * time.Second)
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after lease expiry = %v, %v", ok, err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after expiry = %v, want ErrNotHeld", err)
	}
	if held, _ := b.IsHeld(ctx); !held {
		t.Fatal("expired holder's Unlock released the new holder")
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done still open after Unlock reported the hold gone")
	}
	mustUnlock(t, b)
}

func TestWrongTypeMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	m := rlock.New(rdb, "taken")
	key := keyspace.NewNames("taken").Lock()
	if err := mr.Set(key, "user data"); err != nil {
		t.Fatal(err)
	}
	_, err := m.TryLock(ctx)
	if !errors.Is(err, rlock.ErrWrongType) {
		t.Fatalf("TryLock on a string key = %v, want ErrWrongType", err)
	}
	if _, err := m.ForceUnlock(ctx); !errors.Is(err, rlock.ErrWrongType) {
		t.Fatalf("ForceUnlock on a string key = %v, want ErrWrongType", err)
	}
	if v, _ := mr.Get(key); v != "user data" {
		t.Fatalf("string key changed to %q", v)
	}
}

func TestNewPanics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for name, f := range map[string]func(){
		"nil client":    func() { rlock.New(nil, "x") },
		"empty name":    func() { rlock.New(rdb, "") },
		"zero lease":    func() { rlock.New(rdb, "x", rlock.WithLeaseTime(0)) },
		"tiny watchdog": func() { rlock.New(rdb, "x", rlock.WithWatchdogTimeout(time.Millisecond)) },
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
	err := rlock.New(rdb, "orders").Unlock(t.Context())
	if got, want := err.Error(), `rlock: unlock "orders": lock not held`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

func mustLock(t testing.TB, m *rlock.Mutex) {
	t.Helper()
	if err := m.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func mustUnlock(t testing.TB, m *rlock.Mutex) {
	t.Helper()
	if err := m.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestQueriesMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	a, b := rlock.New(rdb, "q", rlock.WithLeaseTime(time.Minute)), rlock.New(rdb, "q")
	check := func(locked, aHeld, bHeld bool, holds int) {
		t.Helper()
		if got, err := a.IsLocked(ctx); got != locked || err != nil {
			t.Fatalf("IsLocked = %v, %v; want %v", got, err, locked)
		}
		if got, _ := a.IsHeld(ctx); got != aHeld {
			t.Fatalf("a.IsHeld = %v, want %v", got, aHeld)
		}
		if got, _ := b.IsHeld(ctx); got != bHeld {
			t.Fatalf("b.IsHeld = %v, want %v", got, bHeld)
		}
		if got, _ := a.HoldCount(ctx); got != holds {
			t.Fatalf("a.HoldCount = %d, want %d", got, holds)
		}
	}
	check(false, false, false, 0)
	if ttl, err := a.TTL(ctx); ttl != 0 || err != nil {
		t.Fatalf("TTL of a free lock = %v, %v", ttl, err)
	}
	mustLock(t, a)
	check(true, true, false, 1)
	if ttl, _ := b.TTL(ctx); ttl < 59*time.Second {
		t.Fatalf("TTL = %v, want the holder's 1m lease", ttl)
	}
	mustUnlock(t, a)
	check(false, false, false, 0)
	if a.Name() != "q" {
		t.Fatalf("Name = %q", a.Name())
	}
}

func TestDoMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	m := rlock.New(rdb, "do")
	boom := errors.New("boom")
	err := m.Do(t.Context(), func(ctx context.Context) error {
		if held, _ := m.IsHeld(ctx); !held {
			t.Error("fn runs without the lock")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	if locked, _ := m.IsLocked(t.Context()); locked {
		t.Fatal("Do left the lock held")
	}
}

// Do cancels fn's context when the hold is lost.
func TestDoCancelsOnLoss(t *testing.T) {
	_, rdb := redistest.Mini(t)
	m := rlock.New(rdb, "doloss")
	err := m.Do(t.Context(), func(ctx context.Context) error {
		// Another handle's ForceUnlock is seen at the next renewal (the
		// integration tests cover that); this handle's own ends it at once.
		if _, err := m.ForceUnlock(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("fn's context not cancelled after the hold ended")
		}
	})
	if err != nil && !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatal(err)
	}
}
