package hold_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// reviewLock is the in-memory read-write lock behind a Lock whose release
// of mode m runs during(m) after the fake's own, and whose Lost hook
// counts its calls.
type reviewLock struct {
	f      *recLock
	l      *hold.Lock
	mu     sync.Mutex
	lost   []error
	during func(m hold.Mode)
}

func newReviewLock(t *testing.T) *reviewLock {
	_, rdb := redistest.Mini(t)
	r := &reviewLock{f: &recLock{held: map[string]*[2]bool{}, tags: map[string]uint64{}}}
	k := r.f.kind(rdb, t.Name())
	release := k.Release
	k.Release = func(ctx context.Context, m hold.Mode, id string, tag uint64, giveBack bool) (hold.Released, error) {
		out, err := release(ctx, m, id, tag, giveBack)
		if d := r.during; d != nil && !giveBack {
			d(m)
		}
		return out, err
	}
	k.Keeping.OnLost = func(err error) {
		r.mu.Lock()
		r.lost = append(r.lost, err)
		r.mu.Unlock()
	}
	r.l = hold.NewLock(k)
	t.Cleanup(r.l.Tracker().Drop)
	return r
}

func (r *reviewLock) check(t *testing.T, after string) {
	t.Helper()
	checkRecords(t, r.l, r.f, after)
}

// checkRecords checks, after the step named after, that l's records
// follow its holders and agree with what f, the fake's Redis, holds.
func checkRecords(t *testing.T, l *hold.Lock, f *recLock, after string) {
	t.Helper()
	if err := l.CheckRecord(); err != nil {
		t.Errorf("after %s: %v", after, err)
	}
	held, tags := f.snapshot()
	if err := l.Tracker().CheckRedis(held, tags); err != nil {
		t.Errorf("after %s: %v", after, err)
	}
}

// downgrade takes a read level through ctx, Do's of a write hold.
func (r *reviewLock) downgrade(t *testing.T, ctx context.Context) {
	t.Helper()
	if ok, err := r.l.TryLock(ctx, hold.Shared); !ok || err != nil {
		t.Fatalf("downgrade: %v %v", ok, err)
	}
}

// loseDuring has the watchdog give the hold up as lost while a release of
// mode m runs, after the fake has run it.
func (r *reviewLock) loseDuring(m hold.Mode) {
	r.during = func(got hold.Mode) {
		if got == m {
			r.l.Tracker().LoseNow()
		}
	}
}

func (r *reviewLock) losses() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lost)
}

// A write release under a downgraded read level, during which the
// watchdog gives the hold up as lost: the release leaves the read level,
// so the loss stands (reported once), and the read level is owed.
func TestLossDuringWriteReleaseUnderRead(t *testing.T) {
	r := newReviewLock(t)
	ctx := t.Context()
	err := r.l.Do(ctx, hold.Exclusive, func(ctx context.Context) error {
		r.downgrade(t, ctx)
		r.loseDuring(hold.Exclusive)
		return nil
	})
	r.during = nil
	t.Logf("Do: %v", err)
	if !redistest.Closed(r.l.Done()) {
		t.Error("Done open after the loss")
	}
	if n := r.losses(); n != 1 {
		t.Errorf("Lost hook ran %d times; want 1", n)
	}
	r.check(t, "the release")
	if err := r.l.Unlock(context.Background(), hold.Shared); err == nil {
		t.Error("RUnlock of the downgraded read of a lost hold succeeded")
	}
	r.check(t, "the RUnlock")
}

// The last read's release under the write hold (a downgraded read let go
// while the write hold goes on), during which the watchdog gives the hold
// up: the write level stays, so the loss stands, and it is owed.
func TestLossDuringReadReleaseUnderWrite(t *testing.T) {
	r := newReviewLock(t)
	ctx := t.Context()
	_ = r.l.Do(ctx, hold.Exclusive, func(ctx context.Context) error {
		r.downgrade(t, ctx)
		r.loseDuring(hold.Shared)
		_ = r.l.Unlock(context.WithoutCancel(ctx), hold.Shared)
		r.during = nil
		if n := r.losses(); n != 1 {
			t.Errorf("Lost hook ran %d times; want 1", n)
		}
		r.check(t, "the read release")
		return nil
	})
	r.check(t, "Do")
}

// The same with a release that fails: the level going is owed by the
// release, the other by the loss, each once.
func TestLossDuringFailedWriteReleaseUnderRead(t *testing.T) {
	r := newReviewLock(t)
	ctx := t.Context()
	_ = r.l.Do(ctx, hold.Exclusive, func(ctx context.Context) error {
		r.downgrade(t, ctx)
		r.f.mu.Lock()
		r.f.fail = append(r.f.fail, fakeFail{err: replyErr("ERR boom")})
		r.f.mu.Unlock()
		r.loseDuring(hold.Exclusive) // Do's own release, which fails
		return nil
	})
	r.during = nil
	if n := r.losses(); n != 1 {
		t.Errorf("Lost hook ran %d times; want 1", n)
	}
	r.check(t, "the failed release")
}
