package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

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
