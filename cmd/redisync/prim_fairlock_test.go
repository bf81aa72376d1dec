package main

import (
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
)

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
