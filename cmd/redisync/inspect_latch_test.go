package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// TestInspectLatch: a latch with a waiter shows its count and the waiting
// client; at zero, only its receipts are left, and it shows so.
func TestInspectLatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		l := latch.New(b.rdb, name)
		if ok, err := l.TrySetCount(ctx, 3); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		waitCtx, stop := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() { waited <- latch.New(b.client(), name).Wait(waitCtx) }()
		defer func() { stop(); <-waited }()
		ch := keyspace.NewNames(name).LatchChannel()
		redistest.WaitFor(t, 5*time.Second, func() bool { return b.numSub(ch) == 1 })

		r := inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindLatch || r.Count == nil || *r.Count != 2 || r.Subscribers != 1 {
			t.Errorf("report = %+v; want a latch at 2 with one waiting client", r)
		}
		stdout, _ := mustRun(t, exitOK, b.args("inspect", name)...)
		for _, want := range []string{
			"kind         latch (2 request receipt(s), expiring within 10s)",
			"count        2 to go (waiters return at 0)",
			"waiting      1 client(s) subscribed to the latch's channel",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("text output lacks %q:\n%s", want, stdout)
			}
		}
		if strings.Contains(stdout, "key ") {
			t.Errorf("text output lists keys its report should explain:\n%s", stdout)
		}

		for range 2 {
			if err := l.CountDown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		waited <- nil // for the deferred receive
		r = inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindLatch || r.Count == nil || *r.Count != 0 {
			t.Errorf("report at zero = %+v; want a latch at zero, shown by its receipts", r)
		}
		stdout, _ = mustRun(t, exitOK, b.args("inspect", name)...)
		if !strings.Contains(stdout, "latch (at zero, 4 request receipt(s), expiring within 10s)") {
			t.Errorf("text output at zero:\n%s", stdout)
		}
	})
}
