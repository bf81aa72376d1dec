package faulttest_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// A wait that fails because Redis is unreachable says why at any deadline:
// its error matches the ctx's and wraps the connection error, for every
// primitive, also when the deadline comes before go-redis' own dial
// retries give up (they take about 1.7s against a port nothing listens
// on).
func TestWaitErrorWrapsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens on addr
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, deadline := range []time.Duration{300 * time.Millisecond, 800 * time.Millisecond} {
		var wg sync.WaitGroup
		for _, w := range waits(rdb, redistest.UniqueName(t)) {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				defer cancel()
				start := time.Now()
				err := w.wait(ctx)
				took := time.Since(start)
				var op *net.OpError
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &op) {
					t.Errorf("%s, deadline %v, Redis unreachable: %v; want it to match context.DeadlineExceeded and wrap a *net.OpError", w.op, deadline, err)
				}
				if took > deadline+250*time.Millisecond {
					t.Errorf("%s, deadline %v: returned after %v", w.op, deadline, took)
				}
			})
		}
		wg.Wait()
	}
}
