package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// memLock is fake's lock behind a hold.Lock rather than a bare Tracker:
// its acquisitions take one level of Exclusive, the next one's reply
// coming late by late.
type memLock struct {
	fake
	late time.Duration // how late the next acquisition's reply comes
}

func (f *memLock) kind(rdb redis.UniversalClient, lease time.Duration) hold.Kind {
	return hold.Kind{
		Base:    hold.NewBase("mem", rdb, "stale"),
		Keeping: hold.Keeping{WatchdogTimeout: lease},
		Channel: func(hold.Mode) string { return "mem" },
		Acquire: func(context.Context, hold.Mode, hold.Asking) (hold.Grant, error) {
			f.mu.Lock()
			f.levels[hold.Exclusive]++
			g := hold.Grant{OK: true, Levels: f.levels}
			late := f.late
			f.late = 0
			f.mu.Unlock()
			time.Sleep(late) // fault injection: a slow reply
			return g, nil
		},
		Release: f.release,
		Renew: func(context.Context, redis.Scripter, string) func() (bool, error) {
			return func() (bool, error) { return f.held(hold.Exclusive) > 0, nil }
		},
	}
}

// A re-entry whose reply comes after the validity it grants is given
// back, but the hold it re-enters is still there: the re-entry tries
// again rather than ending the hold as lost (which would leave its level
// in Redis until its lease ran out, with nobody holding it).
func TestStaleReentryKeepsHold(t *testing.T) {
	_, rdb := redistest.Mini(t)
	const lease = 200 * time.Millisecond
	f := &memLock{}
	l := hold.NewLock(f.kind(rdb, lease))
	err := l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
		f.mu.Lock()
		f.late = lease
		f.mu.Unlock()
		if err := l.Lock(ctx, hold.Exclusive); err != nil {
			return err
		}
		if n, err := l.HoldCount(ctx); n != 2 || err != nil {
			t.Errorf("HoldCount after the re-entry = %d, %v; want 2", n, err)
		}
		if ctx.Err() != nil {
			t.Error("the hold ended")
		}
		return l.Unlock(ctx, hold.Exclusive)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.held(hold.Exclusive); n != 0 {
		t.Fatalf("%d levels left held", n)
	}
}
