package semaphore_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// maxCount is 2^53 - 1, the largest count the scripts hold exactly.
const maxCount = 1<<53 - 1

// TestOutOfRangeMini and TestOutOfRange: counts the scripts cannot hold
// exactly are refused, and nothing changes.
func TestOutOfRangeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	outOfRange(t, rdb, "range")
}

func TestOutOfRange(t *testing.T) {
	eachDeployment(t, func(t *testing.T, d deployment) {
		outOfRange(t, d.newClient(t), redistest.UniqueName(t))
	})
}

func outOfRange(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := t.Context()
	s := semaphore.New(rdb, name)
	l := semaphore.NewLeased(rdb, name+"-leased")
	refused := func(op string, err error, text string) {
		t.Helper()
		if !errors.Is(err, semaphore.ErrOutOfRange) || !strings.HasPrefix(fmt.Sprint(err), text) || strings.Contains(fmt.Sprint(err), "script:") {
			t.Fatalf("%s = %v, want %q... matching ErrOutOfRange, with no script id", op, err, text)
		}
	}

	// The report of the issue: SetPermits(2^53), then TryAcquire(2^53+1)
	// left -1 available. Both are refused before any I/O now.
	refused("SetPermits(2^53)", s.SetPermits(ctx, maxCount+1),
		fmt.Sprintf(`semaphore: set permits %q: number out of range: permits 9007199254740992 is beyond 2^53 - 1`, name))
	_, err := s.TrySetPermits(ctx, maxCount+1)
	refused("TrySetPermits(2^53)", err, fmt.Sprintf(`semaphore: try set permits %q: number out of range`, name))
	wantAvailable(t, s, 0)
	if err := s.SetPermits(ctx, maxCount); err != nil {
		t.Fatal(err)
	}
	ok, err := s.TryAcquire(ctx, maxCount+2)
	if ok {
		t.Fatal("TryAcquire(2^53+1) took permits")
	}
	refused("TryAcquire(2^53+1)", err, fmt.Sprintf(`semaphore: acquire %q: number out of range: permits 9007199254740993`, name))
	refused("Acquire(2^53+1)", s.Acquire(ctx, maxCount+2), fmt.Sprintf(`semaphore: acquire %q: number out of range`, name))
	refused("Release(2^53)", s.Release(ctx, maxCount+1), fmt.Sprintf(`semaphore: release %q: number out of range`, name))
	refused("AddPermits(-2^53)", s.AddPermits(ctx, -maxCount-1), fmt.Sprintf(`semaphore: add permits %q: number out of range`, name))
	wantAvailable(t, s, maxCount)

	// Sums past the bound are refused by the script, changing nothing.
	refused("Release(1) at 2^53 - 1", s.Release(ctx, 1),
		fmt.Sprintf(`semaphore: release %q: number out of range: the permit count would pass 2^53 - 1 (9007199254740991)`, name))
	refused("AddPermits(1) at 2^53 - 1", s.AddPermits(ctx, 1), fmt.Sprintf(`semaphore: add permits %q: number out of range`, name))
	wantAvailable(t, s, maxCount)
	if ok, err := s.TryAcquire(ctx, maxCount); !ok || err != nil {
		t.Fatalf("TryAcquire(2^53 - 1) of 2^53 - 1 = %v, %v", ok, err)
	}
	if err := s.AddPermits(ctx, -maxCount); err != nil {
		t.Fatal(err)
	}
	refused("AddPermits(-1) at -(2^53 - 1)", s.AddPermits(ctx, -1), fmt.Sprintf(`semaphore: add permits %q: number out of range`, name))
	wantAvailable(t, s, -maxCount)

	// A count beyond the bound (here written by hand; a give-back can
	// take it there) still compares exactly with any n within it, and
	// Drain, which could not report it exactly, refuses it.
	key := keyspace.NewNames(name).Lock()
	if err := rdb.Set(ctx, key, strconv.FormatInt(maxCount+2, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Drain(ctx)
	refused("Drain of 2^53 + 1", err, fmt.Sprintf(`semaphore: drain %q: number out of range`, name))
	if ok, err := s.TryAcquire(ctx, maxCount); !ok || err != nil {
		t.Fatalf("TryAcquire(2^53 - 1) of 2^53 + 1 = %v, %v", ok, err)
	}
	wantAvailable(t, s, 2)
	if err := s.SetPermits(ctx, maxCount-1); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TryAcquire(ctx, maxCount); ok || err != nil {
		t.Fatalf("TryAcquire(2^53 - 1) of 2^53 - 2 = %v, %v; want false", ok, err)
	}
	wantAvailable(t, s, maxCount-1)

	// The leased semaphore's total: the same bounds.
	refused("Leased.SetPermits(2^53)", l.SetPermits(ctx, maxCount+1),
		fmt.Sprintf(`semaphore: set permits %q: number out of range: permits 9007199254740992 is beyond 2^53 - 1`, name+"-leased"))
	_, err = l.TrySetPermits(ctx, maxCount+1)
	refused("Leased.TrySetPermits(2^53)", err, fmt.Sprintf(`semaphore: try set permits %q: number out of range`, name+"-leased"))
	refused("Leased.AddPermits(2^53)", l.AddPermits(ctx, maxCount+1), fmt.Sprintf(`semaphore: add permits %q: number out of range`, name+"-leased"))
	if err := l.SetPermits(ctx, maxCount-1); err != nil {
		t.Fatal(err)
	}
	refused("Leased.AddPermits(2) at 2^53 - 2", l.AddPermits(ctx, 2),
		fmt.Sprintf(`semaphore: add permits %q: number out of range: the permit total would pass 2^53 - 1 (9007199254740991)`, name+"-leased"))
	wantLeasedAvailable(t, l, maxCount-1)
	id, ok, err := l.TryAcquire(ctx, 0)
	if !ok || err != nil {
		t.Fatalf("Leased.TryAcquire = %v, %v", ok, err)
	}
	wantLeasedAvailable(t, l, maxCount-2)
	if err := l.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := l.AddPermits(ctx, 1); err != nil {
		t.Fatalf("Leased.AddPermits(1) to 2^53 - 1 = %v", err)
	}
	wantLeasedAvailable(t, l, maxCount)
}

// A Release or AddPermits whose reply is lost after it took the count to
// 2^53 - 1 is resent: the resend finds its receipt and reports the first
// run's success, not a sum past the bound.
func TestOutOfRangeResendMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	s := semaphore.New(rdb, "range-resend")
	l := semaphore.NewLeased(rdb, "range-resend-leased")
	if err := s.SetPermits(t.Context(), maxCount-2); err != nil {
		t.Fatal(err)
	}
	if err := l.SetPermits(t.Context(), maxCount-1); err != nil {
		t.Fatal(err)
	}
	for op, add := range map[string]func() error{
		"Release(1)":        func() error { return s.Release(t.Context(), 1) },
		"AddPermits(1)":     func() error { return s.AddPermits(t.Context(), 1) },
		"Leased.AddPermits": func() error { return l.AddPermits(t.Context(), 1) },
	} {
		faults.LoseReplies(1)
		if err := add(); err != nil {
			t.Fatalf("%s with its reply lost = %v, want nil", op, err)
		}
		if faults.Pending() != 0 {
			t.Fatalf("%s: no reply was lost", op)
		}
	}
	wantAvailable(t, s, maxCount)
	wantLeasedAvailable(t, l, maxCount)
}
