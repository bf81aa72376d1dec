//go:build redisync_pending

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Tests of the pieces for the primitives that land after the command.

func TestInspectAndUnlockFairlock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		holder := fairlock.New(b.client(), name, fairlock.WithLeaseTime(time.Minute))
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 2)
		waiters := []*fairlock.Mutex{fairlock.New(b.client(), name), fairlock.New(b.client(), name)}
		for _, w := range waiters {
			go func() { got <- w.Lock(ctx) }()
		}
		var r report
		redistest.WaitFor(t, 5*time.Second, func() bool {
			r = inspectJSON(t, b.flags, name)[0]
			return len(r.Queue) == 2
		})
		if r.Kind != kindFairlock || len(r.Holders) != 1 || r.Queue[0].DeadlineMs == 0 {
			t.Errorf("fair lock report = %+v", r)
		}
		mustRun(t, exitOK, b.args("unlock", "--force", name)...)
		awaitLock(t, got, "head waiter after unlock --force")
		for _, w := range waiters {
			_ = w.Unlock(ctx) // the one that holds passes it to the other
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		for _, w := range waiters {
			_ = w.Unlock(ctx)
		}
		_ = holder.Unlock(ctx)
	})
}

func TestInspectAndUnlockRWLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		readers := []*rwlock.RWMutex{rwlock.New(b.rdb, name), rwlock.New(b.rdb, name)}
		for _, rd := range readers {
			if err := rd.RLock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindRWLock || r.Mode != "read" || len(r.Holders) < 2 {
			t.Errorf("rwlock report with two readers = %+v", r)
		}
		writer := rwlock.New(b.client(), name)
		got := make(chan error, 1)
		go func() { got <- writer.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return b.numSub(internal.NewNames(name).Channel()) >= 1 })
		mustRun(t, exitOK, b.args("unlock", "--force", name)...)
		awaitLock(t, got, "waiting writer after unlock --force")
		if r := inspectJSON(t, b.flags, name)[0]; r.Mode != "write" {
			t.Errorf("rwlock report with a writer = %+v", r)
		}
		_ = writer.Unlock(ctx)
		for _, rd := range readers {
			_ = rd.RUnlock(ctx)
		}
	})
}

func TestInspectSemaphores(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name, leasedName := redistest.UniqueName(t), redistest.UniqueName(t)
		s := semaphore.New(b.rdb, name)
		if err := s.SetPermits(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		l := semaphore.NewLeased(b.rdb, leasedName)
		if err := l.SetPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
		id, err := l.Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rs := inspectJSON(t, b.flags, name, leasedName)
		if rs[0].Kind != kindSemaphore || rs[0].Permits == nil || *rs[0].Permits != 3 {
			t.Errorf("semaphore report = %+v", rs[0])
		}
		if rs[1].Kind != kindSemaphore {
			t.Errorf("leased semaphore report = %+v", rs[1])
		}
		stdout, _ := mustRun(t, exitOK, b.args("inspect", leasedName)...)
		if !strings.Contains(stdout, id) {
			t.Errorf("inspect does not show the leased permit %s:\n%s", id, stdout)
		}
		_, stderr := mustRun(t, exitFailure, b.args("unlock", "--force", name)...)
		if !strings.Contains(stderr, "not a lock") {
			t.Errorf("unlock of a semaphore: %s", stderr)
		}
		_ = l.Release(context.WithoutCancel(ctx), id)
		for _, n := range []string{name, leasedName} {
			if _, err := deleteAll(ctx, b.rdb, globEscape(internal.NewNames(n).Lock())+"*"); err != nil {
				t.Fatal(err)
			}
		}
	})
}
