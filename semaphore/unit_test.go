package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/semaphore"
)

// Unit tier: miniredis. Leases are measured with TIME, which miniredis
// answers from the clock set with SetTime.

func TestCountingMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	s := semaphore.New(rdb, "c")
	if ok, err := s.TrySetPermits(ctx, 3); !ok || err != nil {
		t.Fatalf("first TrySetPermits = %v, %v", ok, err)
	}
	if ok, err := s.TrySetPermits(ctx, 7); ok || err != nil {
		t.Fatalf("second TrySetPermits = %v, %v; want false", ok, err)
	}
	wantAvailable(t, s, 3)
	if ok, err := s.TryAcquire(ctx, 2); !ok || err != nil {
		t.Fatalf("TryAcquire(2) of 3 = %v, %v", ok, err)
	}
	if ok, err := s.TryAcquire(ctx, 2); ok || err != nil {
		t.Fatalf("TryAcquire(2) of 1 = %v, %v; want false", ok, err)
	}
	wantAvailable(t, s, 1)
	mustRelease(t, s, 2)
	wantAvailable(t, s, 3)
	if err := s.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wantAvailable(t, s, 1)
}

// TestRedissonChecksMini carries over Redisson's RSemaphore checks.
func TestRedissonChecksMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	redissonChecks(t, rdb, "r")
}

func TestZeroAndNegativeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	zeroAndNegative(t, rdb, "z")
}

func TestWrongTypeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	wrongType(t, rdb, "w")
}

func TestLeasedMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	now := time.Now()
	mr.SetTime(now)
	l := semaphore.NewLeased(rdb, "l")
	if ok, err := l.TrySetPermits(ctx, 2); !ok || err != nil {
		t.Fatalf("TrySetPermits = %v, %v", ok, err)
	}
	a := mustTryAcquireLeased(t, l, time.Second)
	b := mustTryAcquireLeased(t, l, 10*time.Second)
	if a == b {
		t.Fatal("two permits share an id")
	}
	if id, ok, err := l.TryAcquire(ctx, time.Second); ok || err != nil || id != "" {
		t.Fatalf("third TryAcquire = %q, %v, %v; want a failure", id, ok, err)
	}
	wantLeasedAvailable(t, l, 0)

	mr.SetTime(now.Add(1500 * time.Millisecond)) // a's lease is over
	wantLeasedAvailable(t, l, 1)
	if ok, err := l.Renew(ctx, a, time.Second); ok || err != nil {
		t.Fatalf("Renew of an expired permit = %v, %v; want false", ok, err)
	}
	if err := l.Release(ctx, a); !errors.Is(err, semaphore.ErrNotHeld) {
		t.Fatalf("Release of an expired permit = %v, want ErrNotHeld", err)
	}
	if ok, err := l.Renew(ctx, b, 30*time.Second); !ok || err != nil {
		t.Fatalf("Renew of a live permit = %v, %v", ok, err)
	}
	mr.SetTime(now.Add(20 * time.Second)) // past b's first lease, not its renewed one
	wantLeasedAvailable(t, l, 1)
	c := mustTryAcquireLeased(t, l, time.Minute)

	// A reduction below the acquired count leaves Available negative.
	if err := l.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wantLeasedAvailable(t, l, -1)
	if err := l.AddPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantLeasedAvailable(t, l, 1)
	for _, id := range []string{b, c} {
		if err := l.Release(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, id); !errors.Is(err, semaphore.ErrNotHeld) {
			t.Fatalf("second Release = %v, want ErrNotHeld", err)
		}
	}
	wantLeasedAvailable(t, l, 3)
	if n := mr.Exists(keyspace.NewNames("l").Lock()); n {
		t.Fatal("permit set left behind with no permit acquired")
	}
}

func TestLeasedWrongTypeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	leasedWrongType(t, rdb, "lw")
}

// TestUndoIsExactMini drives the acquire and undo scripts directly: an undo
// gives back exactly what its request took, and a request that arrives
// after its undo takes nothing.
func TestUndoIsExactMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	names := keyspace.NewNames("u")
	k := script.SemaphoreKeys{Permits: names.Lock(), Channel: names.Channel()}
	rdb.Set(ctx, k.Permits, 5, 0)
	req := func(id string) script.Request {
		return script.Request{Receipt: names.Sub("acquire:" + id), TTL: time.Minute, Deadline: time.Now().Add(exactly.RequestWindow).UnixMilli()}
	}
	taken, err := script.SemaphoreAcquire(ctx, rdb, k, req("1"), 3, nil).Result()
	if err != nil || !taken.OK || taken.Available != 2 {
		t.Fatalf("acquire = %+v, %v", taken, err)
	}
	again, err := script.SemaphoreAcquire(ctx, rdb, k, req("1"), 3, nil).Result()
	if err != nil || !again.OK || again.Available != 2 {
		t.Fatalf("repeated acquire = %+v, %v; want success taking nothing", again, err)
	}
	if n, err := script.SemaphoreUndo(ctx, rdb, k, req("1"), false, nil).Result(); n != 3 || err != nil {
		t.Fatalf("undo = %d, %v; want 3 given back", n, err)
	}
	if n, _ := script.SemaphoreUndo(ctx, rdb, k, req("1"), false, nil).Result(); n != 0 {
		t.Fatalf("second undo gave back %d", n)
	}
	// Undo before the request arrives: the request takes nothing.
	if n, _ := script.SemaphoreUndo(ctx, rdb, k, req("2"), false, nil).Result(); n != 0 {
		t.Fatalf("undo of a request that never ran gave back %d", n)
	}
	late, err := script.SemaphoreAcquire(ctx, rdb, k, req("2"), 1, nil).Result()
	if err != nil || late.OK {
		t.Fatalf("late acquire after undo = %+v, %v; want nothing taken", late, err)
	}
	if v := rdb.Get(ctx, k.Permits).Val(); v != "5" {
		t.Fatalf("permits = %s, want 5", v)
	}
}

// TestCancelledInFlightMini loses the reply of the acquire script, as when
// ctx ends while it is in flight: Acquire must give the permits back.
func TestCancelledInFlightMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	s := semaphore.New(rdb, "f")
	l := semaphore.NewLeased(rdb, "fl")
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := l.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The next script runs on the server, then its caller gets
	// context.Canceled instead of the reply.
	faults := redistest.AddScriptFaults(rdb)

	faults.LoseReplies(1, redistest.LoseAs(context.Canceled))
	err := s.Acquire(ctx, 2)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with its reply lost = %v, want context.Canceled", err)
	}
	wantAvailable(t, s, 3)

	faults.LoseReplies(1, redistest.LoseAs(context.Canceled))
	if _, err := l.Acquire(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Leased.Acquire with its reply lost = %v, want context.Canceled", err)
	}
	wantLeasedAvailable(t, l, 1)
}

func TestNewPanicsMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for name, f := range map[string]func(){
		"nil client":         func() { semaphore.New(nil, "x") },
		"empty name":         func() { semaphore.New(rdb, "") },
		"leased nil client":  func() { semaphore.NewLeased(nil, "x") },
		"leased empty name":  func() { semaphore.NewLeased(rdb, "") },
		"tiny watchdog":      func() { semaphore.NewLeased(rdb, "x", semaphore.WithWatchdogTimeout(time.Millisecond)) },
		"tiny poll interval": func() { semaphore.New(rdb, "x", semaphore.WithPollInterval(0)) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); len(s) < 20 {
					t.Fatalf("panic %v is not a clear message", r)
				}
			}()
			f()
		})
	}
}

func TestErrorMessagesMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	_, renewErr := semaphore.NewLeased(rdb, "db").Renew(ctx, "id", -time.Second)
	for _, c := range []struct {
		err  error
		want string
	}{
		{semaphore.NewLeased(rdb, "workers").Release(ctx, "nope"), `semaphore: release "workers": permit "nope" not held (unknown, expired or released)`},
		{semaphore.New(rdb, "db").Release(ctx, -2), `semaphore: release "db": negative argument: permits -2`},
		{renewErr, `semaphore: renew "db": negative argument: lease -1s`},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("error = %v, want %q", c.err, c.want)
		}
	}
}
