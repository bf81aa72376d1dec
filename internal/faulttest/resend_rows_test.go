package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

type newHandle func(rdb redis.UniversalClient, name string, opts ...time.Duration) handle

// lockRow: a Lock whose reply is lost is one level; a re-entry through
// the hold's ctx adds none in Redis (re-entry is counted in the process),
// and as many Unlocks release them.
func lockRow(h newHandle) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		l := h(r.via, r.name)
		dropped := r.drop()
		err := l.do(t.Context(), func(ctx context.Context) error {
			mustDropped(t, dropped)
			if n := l.levels(ctx, r.direct); n != 1 {
				t.Fatalf("one Lock left %d levels in Redis", n)
			}
			if err := l.lock(ctx); err != nil {
				t.Fatalf("re-entry: %v", err)
			}
			if n := l.levels(ctx, r.direct); n != 1 {
				t.Fatalf("a re-entry left %d levels in Redis, want 1", n)
			}
			return l.unlock(ctx)
		})
		if err != nil {
			t.Fatalf("Lock with a lost reply: %v", err)
		}
	}
}

// unlockRow: an Unlock whose reply is lost releases the hold and reports
// success; the Unlock of a re-entered level before it sends nothing.
func unlockRow(h newHandle) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		l := h(r.via, r.name)
		var last <-chan struct{}
		err := l.do(t.Context(), func(ctx context.Context) error {
			if err := l.lock(ctx); err != nil {
				return err
			}
			if err := l.unlock(ctx); err != nil {
				t.Fatalf("Unlock of the re-entered level: %v", err)
			}
			if n := l.levels(ctx, r.direct); n != 1 {
				t.Fatalf("Unlock left %d levels in Redis, want 1", n)
			}
			last = r.drop() // Do's own Unlock, of the last level
			return nil
		})
		if err != nil {
			t.Fatalf("last Unlock with a lost reply: %v", err)
		}
		mustDropped(t, last)
		if n := l.levels(t.Context(), r.direct); n != 0 || !redistest.Closed(l.done()) {
			t.Fatalf("after the last Unlock: %d levels in Redis, Done closed %v", n, redistest.Closed(l.done()))
		}
	}
}

// renewRow: a renewal whose reply is lost does not lose the hold.
func renewRow(h newHandle) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		// Long enough that the renewals after the loss (every third of
		// it, the first on a new connection) have slack on a loaded
		// 2-core machine: 600ms once lost the hold under the full suite.
		const lease = 1500 * time.Millisecond
		l := h(r.via, r.name, lease)
		ctx := t.Context()
		if err := l.lock(ctx); err != nil {
			t.Fatal(err)
		}
		mustDropped(t, r.drop())
		time.Sleep(lease) // the hold must outlive a lease after the loss
		if redistest.Closed(l.done()) || l.levels(ctx, r.direct) != 1 {
			t.Fatal("the hold was lost after a renewal's reply was lost")
		}
		if err := l.unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

type forcer interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	ForceUnlock(ctx context.Context) (bool, error)
}

// forceRow: a ForceUnlock whose reply is lost reports that it deleted the
// lock, which is gone.
func forceRow(h func(rdb redis.UniversalClient, name string) forcer) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		ctx := t.Context()
		holder := h(r.direct, r.name)
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		dropped := r.drop()
		deleted, err := h(r.via, r.name).ForceUnlock(ctx)
		mustDropped(t, dropped)
		if err != nil || !deleted {
			t.Fatalf("ForceUnlock with a lost reply = %v, %v; want true, nil", deleted, err)
		}
		// The holder learns at once that its hold is gone, rather than at
		// its next renewal: its watchdog must not outlive the test.
		if err := holder.Unlock(ctx); !errors.Is(err, errs.ErrNotHeld) {
			t.Fatalf("the force-unlocked holder's Unlock = %v, want ErrNotHeld", err)
		}
	}
}

// leaveRow: a waiter that gives up leaves the line even when the reply of
// its leave is lost.
func leaveRow(h func(rdb redis.UniversalClient, name string) forcer) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		ctx := t.Context()
		holder := h(r.direct, r.name)
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		dropped := r.drop()
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := h(r.via, r.name).Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiter's Lock = %v", err)
		}
		mustDropped(t, dropped)
		if n := r.direct.LLen(ctx, "redisync:{"+r.name+"}:queue").Val(); n != 0 {
			t.Fatalf("%d waiters left in line", n)
		}
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// grantingUnlockRow is unlockRow, then a release of the last level that
// grants the lock to a waiter in line and whose reply is lost: the resend
// neither grants again nor releases the grantee's hold, the holder's hold
// ends, and the grantee alone holds one level.
func grantingUnlockRow(h newHandle) func(t *testing.T, r resend) {
	return func(t *testing.T, r resend) {
		unlockRow(h)(t, r)
		ctx := t.Context()
		holder := h(r.via, r.name)
		if err := holder.lock(ctx); err != nil {
			t.Fatal(err)
		}
		waiter := h(r.direct, r.name)
		got := make(chan error, 1)
		go func() { got <- waiter.lock(ctx) }()
		parked(t, r.direct, r.name, 1)
		dropped := r.drop()
		if err := holder.unlock(ctx); err != nil {
			t.Fatalf("Unlock that grants, with a lost reply: %v", err)
		}
		mustDropped(t, dropped)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter never held the lock granted to it")
		}
		if v := redistest.Holders(ctx, r.direct, mainKey(r.name)); len(v) != 1 {
			t.Fatalf("lock hash after a resent granting unlock = %v, want the grantee alone", v)
		}
		if n := waiter.levels(ctx, r.direct); n != 1 || !redistest.Closed(holder.done()) || redistest.Closed(waiter.done()) {
			t.Fatalf("grantee's levels %d (want 1), holder's Done closed %v (want true), grantee's %v (want false)",
				n, redistest.Closed(holder.done()), redistest.Closed(waiter.done()))
		}
		if err := waiter.unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// withdrawRow: a waiting writer that gives up withdraws its announcement
// even when the reply of the withdrawal is lost.
func withdrawRow(t *testing.T, r resend) {
	ctx := t.Context()
	reader := rwlock.New(r.direct, r.name)
	if err := reader.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := r.drop()
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := rwlock.New(r.via, r.name).Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("writer's Lock = %v", err)
	}
	mustDropped(t, dropped)
	second := rwlock.New(r.direct, r.name)
	if ok, err := second.TryRLock(ctx); err != nil || !ok {
		t.Fatalf("a new reader after the writer left: %v, %v (announcement left behind)", ok, err)
	}
	for _, rd := range []*rwlock.RWMutex{reader, second} {
		if err := rd.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
