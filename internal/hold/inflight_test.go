package hold_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// newRenewedFake is newFake with a watchdog that renews the hold every
// third of lease, finding it gone when the fake holds no level. during,
// if set, runs inside every release, after the fake's own; each of more
// changes the Tracker's Config before the Tracker is made.
func newRenewedFake(t *testing.T, lease time.Duration, during func(f *fake), more ...func(c *hold.Config)) *fake {
	_, rdb := redistest.Mini(t)
	f := &fake{}
	cfg := hold.Config{
		RDB:   rdb,
		Lease: lease,
		Renew: func(context.Context, redis.Scripter, string) func() (bool, error) {
			return func() (bool, error) { return f.held(hold.Exclusive) > 0, nil }
		},
		Release: func(ctx context.Context, m hold.Mode, id string, _ uint64, giveBack bool) (hold.Released, error) {
			out, err := f.release(ctx, m, id, 0, giveBack)
			if during != nil {
				during(f)
			}
			return out, err
		},
		Lost: f.onLost,
	}
	for _, change := range more {
		change(&cfg)
	}
	f.tracker = hold.New(cfg)
	t.Cleanup(f.tracker.Drop)
	return f
}

func (f *fake) losses() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.lost...)
}

// A renewal that runs after the final release and reports the hold gone
// before the release's reply is read is no loss: the release ended it.
func TestRenewalDuringFinalReleaseIsNoLoss(t *testing.T) {
	const lease = 300 * time.Millisecond
	f := newRenewedFake(t, lease, func(f *fake) {
		// The release ran; its reply is on the way while the watchdog
		// finds the lock gone.
		redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.Closed(f.tracker.Done()) })
	})
	f.mustReleaseWithoutLoss(t)
}

// mustReleaseWithoutLoss takes a level and releases it, and fails t
// unless the release succeeds with no loss reported.
func (f *fake) mustReleaseWithoutLoss(t *testing.T) {
	t.Helper()
	f.mustAcquire(t, hold.Exclusive)
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if lost := f.losses(); len(lost) != 0 {
		t.Fatalf("Lost hook called %v for a hold its holder released", lost)
	}
}

// A loss the watchdog finds while a release is in flight that does not
// release is reported once, when the release's outcome is known.
func TestRenewalDuringFailedReleaseIsLoss(t *testing.T) {
	const lease = 300 * time.Millisecond
	f := newRenewedFake(t, lease, func(f *fake) {
		f.mu.Lock()
		f.levels = hold.Levels{} // the lease ran out in Redis
		f.mu.Unlock()
		redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.Closed(f.tracker.Done()) })
	})
	f.mustAcquire(t, hold.Exclusive)
	f.failNext(fakeFail{err: replyErr("ERR boom")})
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err == nil {
		t.Fatal("Release succeeded")
	}
	if lost := f.losses(); len(lost) != 1 || !errors.Is(lost[0], errs.ErrLost) {
		t.Fatalf("Lost hook calls %v, want one ErrLost", lost)
	}
}
