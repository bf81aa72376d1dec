package semaphore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/semaphore"
)

// Checks shared by the unit, integration and cluster tiers.

// redissonChecks carries over Redisson's RSemaphore checks.
func redissonChecks(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	s := semaphore.New(rdb, name)

	// Release on a never-set semaphore creates the permits.
	wantAvailable(t, s, 0)
	mustRelease(t, s, 2)
	wantAvailable(t, s, 2)
	// TrySetPermits only once: the count exists now.
	if ok, err := s.TrySetPermits(ctx, 10); ok || err != nil {
		t.Fatalf("TrySetPermits on a set semaphore = %v, %v; want false", ok, err)
	}
	wantAvailable(t, s, 2)

	// Drain returns and zeroes what was available.
	if n, err := s.Drain(ctx); n != 2 || err != nil {
		t.Fatalf("Drain = %d, %v; want 2", n, err)
	}
	wantAvailable(t, s, 0)
	if n, err := s.Drain(ctx); n != 0 || err != nil {
		t.Fatalf("Drain of nothing = %d, %v; want 0", n, err)
	}

	// AddPermits(-5) on 0 gives -5; Release(10) then gives 5.
	if err := s.AddPermits(ctx, -5); err != nil {
		t.Fatal(err)
	}
	wantAvailable(t, s, -5)
	if n, err := s.Drain(ctx); n != 0 || err != nil {
		t.Fatalf("Drain of a deficit = %d, %v; want 0", n, err)
	}
	wantAvailable(t, s, -5)
	if ok, err := s.TryAcquire(ctx, 1); ok || err != nil {
		t.Fatalf("TryAcquire on a deficit = %v, %v; want false", ok, err)
	}
	mustRelease(t, s, 10)
	wantAvailable(t, s, 5)

	// TrySetPermits on a fresh semaphore sets once.
	fresh := semaphore.New(rdb, name+"-fresh")
	if ok, err := fresh.TrySetPermits(ctx, 4); !ok || err != nil {
		t.Fatalf("first TrySetPermits = %v, %v", ok, err)
	}
	if ok, err := fresh.TrySetPermits(ctx, 9); ok || err != nil {
		t.Fatalf("second TrySetPermits = %v, %v; want false", ok, err)
	}
	wantAvailable(t, fresh, 4)
}

// zeroAndNegative checks that n == 0 is a no-op success and a negative n
// or lease an error that changes nothing.
func zeroAndNegative(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	s := semaphore.New(rdb, name)
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 0); err != nil {
		t.Fatalf("Acquire(0) = %v", err)
	}
	if ok, err := s.TryAcquire(ctx, 0); !ok || err != nil {
		t.Fatalf("TryAcquire(0) = %v, %v", ok, err)
	}
	for op, err := range map[string]error{
		"Release(0)":    s.Release(ctx, 0),
		"AddPermits(0)": s.AddPermits(ctx, 0),
	} {
		if err != nil {
			t.Fatalf("%s = %v", op, err)
		}
	}
	wantAvailable(t, s, 3)

	_, tryErr := s.TryAcquire(ctx, -1)
	_, trySetErr := s.TrySetPermits(ctx, -1)
	l := semaphore.NewLeased(rdb, name+"-leased")
	if err := l.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, _, leasedTryErr := l.TryAcquire(ctx, -time.Second)
	_, leasedAcqErr := l.Acquire(ctx, -time.Second)
	_, renewErr := l.Renew(ctx, "x", -time.Second)
	_, leasedTrySetErr := l.TrySetPermits(ctx, -1)
	for op, err := range map[string]error{
		"Acquire(-1)":              s.Acquire(ctx, -1),
		"TryAcquire(-1)":           tryErr,
		"Release(-1)":              s.Release(ctx, -1),
		"SetPermits(-1)":           s.SetPermits(ctx, -1),
		"TrySetPermits(-1)":        trySetErr,
		"Leased.TryAcquire(-1s)":   leasedTryErr,
		"Leased.Acquire(-1s)":      leasedAcqErr,
		"Leased.Renew(-1s)":        renewErr,
		"Leased.SetPermits(-1)":    l.SetPermits(ctx, -1),
		"Leased.TrySetPermits(-1)": leasedTrySetErr,
	} {
		if !errors.Is(err, semaphore.ErrNegativeArgument) {
			t.Errorf("%s = %v, want ErrNegativeArgument", op, err)
		}
	}
	wantAvailable(t, s, 3)
	wantLeasedAvailable(t, l, 1)
}

// wrongType checks every operation of a Semaphore on a name that holds a
// key of another type, or a string that is no permit count.
func wrongType(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	key := keyspace.NewNames(name).Lock()
	for _, setup := range []struct {
		kind  string
		write func() error
		check func() bool
	}{
		{"hash", func() error { return rdb.HSet(ctx, key, "user", "data").Err() },
			func() bool { return rdb.HGet(ctx, key, "user").Val() == "data" }},
		{"string", func() error { return rdb.Set(ctx, key, "precious", 0).Err() },
			func() bool { return rdb.Get(ctx, key).Val() == "precious" }},
	} {
		if err := setup.write(); err != nil {
			t.Fatal(err)
		}
		s := semaphore.New(rdb, name)
		_, tryErr := s.TryAcquire(ctx, 1)
		_, trySetErr := s.TrySetPermits(ctx, 1)
		_, availErr := s.Available(ctx)
		_, drainErr := s.Drain(ctx)
		for op, err := range map[string]error{
			"TryAcquire":    tryErr,
			"Acquire":       s.Acquire(ctx, 1),
			"Release":       s.Release(ctx, 1),
			"AddPermits":    s.AddPermits(ctx, -1),
			"SetPermits":    s.SetPermits(ctx, 1),
			"TrySetPermits": trySetErr,
			"Available":     availErr,
			"Drain":         drainErr,
		} {
			if !errors.Is(err, semaphore.ErrWrongType) {
				t.Errorf("%s on a %s = %v, want ErrWrongType", op, setup.kind, err)
			}
		}
		if !setup.check() {
			t.Fatalf("the %s was changed", setup.kind)
		}
		rdb.Del(ctx, key)
	}
}

// leasedWrongType checks every operation of a Leased on a name whose keys
// hold something else.
func leasedWrongType(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	n := keyspace.NewNames(name)
	leases, permits := n.Lock(), n.Sub("permits")
	for _, setup := range []struct {
		kind  string
		key   string
		write func(key string) error
	}{
		{"string permit set", leases, func(k string) error { return rdb.Set(ctx, k, "7", 0).Err() }},
		{"hash total", permits, func(k string) error { return rdb.HSet(ctx, k, "a", "b").Err() }},
		{"text total", permits, func(k string) error { return rdb.Set(ctx, k, "many", 0).Err() }},
	} {
		if err := setup.write(setup.key); err != nil {
			t.Fatal(err)
		}
		before := rdb.Dump(ctx, setup.key).Val()
		l := semaphore.NewLeased(rdb, name)
		_, _, tryErr := l.TryAcquire(ctx, time.Second)
		_, acqErr := l.Acquire(ctx, time.Second)
		_, renewErr := l.Renew(ctx, "x", time.Second)
		_, trySetErr := l.TrySetPermits(ctx, 1)
		_, availErr := l.Available(ctx)
		for op, err := range map[string]error{
			"TryAcquire":    tryErr,
			"Acquire":       acqErr,
			"Release":       l.Release(ctx, "x"),
			"Renew":         renewErr,
			"SetPermits":    l.SetPermits(ctx, 1),
			"TrySetPermits": trySetErr,
			"AddPermits":    l.AddPermits(ctx, 1),
			"Available":     availErr,
		} {
			if !errors.Is(err, semaphore.ErrWrongType) {
				t.Errorf("%s on a %s = %v, want ErrWrongType", op, setup.kind, err)
			}
		}
		if after := rdb.Dump(ctx, setup.key).Val(); after != before {
			t.Fatalf("the %s was changed", setup.kind)
		}
		rdb.Del(ctx, leases, permits)
	}
}

// wantAvailable checks the available permits once the clean-ups of
// failed calls are done.
func wantAvailable(t *testing.T, s *semaphore.Semaphore, want int64) {
	t.Helper()
	perclient.AwaitTidied(t.Context())
	if n, err := s.Available(t.Context()); n != want || err != nil {
		t.Fatalf("Available = %d, %v; want %d", n, err, want)
	}
}

func wantLeasedAvailable(t *testing.T, l *semaphore.Leased, want int64) {
	t.Helper()
	perclient.AwaitTidied(t.Context())
	if n, err := l.Available(t.Context()); n != want || err != nil {
		t.Fatalf("Available = %d, %v; want %d", n, err, want)
	}
}

func mustRelease(t testing.TB, s *semaphore.Semaphore, n int64) {
	t.Helper()
	if err := s.Release(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func mustTryAcquireLeased(t testing.TB, l *semaphore.Leased, lease time.Duration) string {
	t.Helper()
	id, ok, err := l.TryAcquire(t.Context(), lease)
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	return id
}
