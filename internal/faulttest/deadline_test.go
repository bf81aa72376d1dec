package faulttest_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
)

// deadlineSlack is how long after its ctx deadline a wait may return.
const deadlineSlack = 250 * time.Millisecond

// tidyBound bounds the clean-up a failed wait leaves to the background
// (see perclient.TidyUp): a give-back or a leave of the line, each within
// hold.CleanupTimeout, the give-back of a grant the leave finds after it.
const tidyBound = 3 * time.Second

// Every blocking acquire returns within deadlineSlack of its ctx deadline
// with an error matching context.DeadlineExceeded, also when Redis cannot
// be reached (nothing listens on the port) or does not answer (a proxy
// that accepts and stalls): what the wait leaves to undo, an attempt of
// unknown outcome or a place in line, is finished in the background,
// within tidyBound, instead of holding the caller.
func TestWaitReturnsAtItsDeadline(t *testing.T) {
	redistest.Require(t)
	networks := []struct {
		name string
		addr func(t *testing.T) string
		// ctxTimeout: the client bounds each command by ctx's deadline
		// (go-redis' ContextTimeoutEnabled); without it, the library
		// returns at ctx's end and leaves the command to go-redis' own
		// timeouts in the background.
		ctxTimeout bool
	}{
		{"unreachable", func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			_ = ln.Close() // nothing listens on it now
			return addr
		}, false},
		{"stalled", func(t *testing.T) string {
			p := redistest.NewProxy(t, redistest.SharedServer(t).Addr())
			p.Stall()
			return p.Addr()
		}, true},
		// A default client (redis.NewClient as the README shows it): a
		// script call returns at ctx's end all the same (script.Process).
		{"stalled, default client", func(t *testing.T) string {
			p := redistest.NewProxy(t, redistest.SharedServer(t).Addr())
			p.Stall()
			return p.Addr()
		}, false},
	}
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) {
			addr := nw.addr(t)
			var wg sync.WaitGroup
			for _, d := range []time.Duration{500 * time.Millisecond, 2 * time.Second} {
				rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: nw.ctxTimeout})
				t.Cleanup(func() { _ = rdb.Close() })
				for _, w := range waits(rdb, redistest.UniqueName(t)) {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(t.Context(), d)
						defer cancel()
						deadline, _ := ctx.Deadline()
						err := w.wait(ctx)
						late := time.Since(deadline)
						t.Logf("%v %s: returned %v after the deadline", d, w.op, late.Round(time.Millisecond))
						if late > deadlineSlack || !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("%v %s: returned %v after the deadline with %v, want within %v and context.DeadlineExceeded", d, w.op, late, err, deadlineSlack)
						}
					})
				}
			}
			wg.Wait()
			awaitTidied(t) // before the clients close
		})
	}
}

// awaitTidied waits until no clean-up runs in the background, and fails
// t if that takes longer than tidyBound.
func awaitTidied(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tidyBound)
	defer cancel()
	if !perclient.AwaitTidied(ctx) {
		t.Errorf("a clean-up still runs %v after the waits ended", tidyBound)
	}
}
