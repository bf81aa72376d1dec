package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// The semaphore rows of the lost-reply table. Permit counts are state a
// semaphore keeps on purpose, so each row deletes its keys when done.

func init() {
	for file, row := range map[string]func(t *testing.T, r resend){
		"leased_acquire.lua": func(t *testing.T, r resend) {
			l := semaphore.NewLeased(r.via, r.name)
			mustSet(t, semaphore.NewLeased(r.direct, r.name), 1)
			dropped := r.drop()
			id, err := l.Acquire(t.Context(), 0)
			mustDropped(t, dropped)
			wantAvailable(t, semaphore.NewLeased(r.direct, r.name), err, 0)
			if err := l.Release(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		},
		"leased_release.lua": func(t *testing.T, r resend) {
			l := semaphore.NewLeased(r.via, r.name)
			mustSet(t, l, 1)
			id, err := l.Acquire(t.Context(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			dropped := r.drop()
			err = l.Release(t.Context(), id)
			mustDropped(t, dropped)
			wantAvailable(t, l, err, 1)
		},
		"leased_renew.lua": func(t *testing.T, r resend) {
			const lease = 600 * time.Millisecond
			l := semaphore.NewLeased(r.via, r.name, semaphore.WithWatchdogTimeout(lease))
			mustSet(t, l, 1)
			id, err := l.Acquire(t.Context(), 0)
			if err != nil {
				t.Fatal(err)
			}
			mustDropped(t, r.drop())
			time.Sleep(lease)
			if redistest.Closed(l.Done(id)) {
				t.Fatal("the permit was given up after a renewal's reply was lost")
			}
			wantAvailable(t, l, l.Release(t.Context(), id), 1)
		},
		"leased_setpermits.lua": func(t *testing.T, r resend) {
			dropped := r.drop()
			ok, err := semaphore.NewLeased(r.via, r.name).TrySetPermits(t.Context(), 4)
			mustDropped(t, dropped)
			if !ok {
				t.Errorf("TrySetPermits on a new name with a lost reply reported false")
			}
			wantAvailable(t, semaphore.NewLeased(r.direct, r.name), err, 4)
		},
		"leased_addpermits.lua": func(t *testing.T, r resend) {
			mustSet(t, semaphore.NewLeased(r.direct, r.name), 3)
			dropped := r.drop()
			err := semaphore.NewLeased(r.via, r.name).AddPermits(t.Context(), 2)
			mustDropped(t, dropped)
			wantAvailable(t, semaphore.NewLeased(r.direct, r.name), err, 5)
		},
		"leased_available.lua": func(t *testing.T, r resend) {
			mustSet(t, semaphore.NewLeased(r.direct, r.name), 3)
			dropped := r.drop()
			n, err := semaphore.NewLeased(r.via, r.name).Available(t.Context())
			mustDropped(t, dropped)
			if err != nil || n != 3 {
				t.Fatalf("Available with a lost reply = %d, %v; want 3", n, err)
			}
		},
		"semaphore_acquire.lua": func(t *testing.T, r resend) {
			mustSet(t, semaphore.New(r.direct, r.name), 2)
			dropped := r.drop()
			err := semaphore.New(r.via, r.name).Acquire(t.Context(), 1)
			mustDropped(t, dropped)
			wantAvailable(t, semaphore.New(r.direct, r.name), err, 1)
		},
		"semaphore_undo.lua": func(t *testing.T, r resend) {
			mustSet(t, semaphore.New(r.direct, r.name), 2)
			// A TryAcquire whose reply is lost is undone; the undo's reply
			// is lost too, and the take must still be given back once.
			acquired, undone := r.dropScript("semaphore_acquire.lua"), r.drop()
			ok, err := semaphore.New(r.via, r.name).TryAcquire(t.Context(), 1)
			mustDropped(t, acquired)
			if ok || err == nil {
				t.Fatalf("TryAcquire with a lost reply = %v, %v; want false and the error", ok, err)
			}
			mustDropped(t, undone)
			wantAvailable(t, semaphore.New(r.direct, r.name), nil, 2)
		},
		"semaphore_release.lua": func(t *testing.T, r resend) {
			dropped := r.drop()
			err := semaphore.New(r.via, r.name).Release(t.Context(), 2)
			mustDropped(t, dropped)
			wantAvailable(t, semaphore.New(r.direct, r.name), err, 2)
		},
		"semaphore_setpermits.lua": func(t *testing.T, r resend) {
			dropped := r.drop()
			ok, err := semaphore.New(r.via, r.name).TrySetPermits(t.Context(), 3)
			mustDropped(t, dropped)
			if !ok {
				t.Errorf("TrySetPermits on a new name with a lost reply reported false")
			}
			wantAvailable(t, semaphore.New(r.direct, r.name), err, 3)
		},
		"semaphore_drain.lua": func(t *testing.T, r resend) {
			mustSet(t, semaphore.New(r.direct, r.name), 3)
			dropped := r.drop()
			n, err := semaphore.New(r.via, r.name).Drain(t.Context())
			mustDropped(t, dropped)
			if n != 3 {
				t.Errorf("Drain with a lost reply = %d, want 3", n)
			}
			wantAvailable(t, semaphore.New(r.direct, r.name), err, 0)
		},
	} {
		lostReplyRows[file] = func(t *testing.T, r resend) {
			row(t, r)
			// The permit count and any receipt: a semaphore keeps its
			// count, and a receipt expires by itself.
			keys, _ := r.direct.Keys(t.Context(), "*{"+r.name+"}*").Result()
			if len(keys) > 0 {
				r.direct.Del(t.Context(), keys...)
			}
		}
	}
}

type permits interface {
	SetPermits(ctx context.Context, n int64) error
	Available(ctx context.Context) (int64, error)
}

func mustSet(t *testing.T, p permits, n int64) {
	t.Helper()
	if err := p.SetPermits(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// wantAvailable fails t unless the operation's err is nil and p has want
// permits available: the operation applied exactly once.
func wantAvailable(t *testing.T, p permits, err error, want int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("with a lost reply: %v", err)
	}
	if n, err := p.Available(t.Context()); err != nil || n != want {
		t.Fatalf("Available = %d, %v; want %d (applied other than once)", n, err, want)
	}
}
