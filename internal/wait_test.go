package internal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// A waiter that arrives while another waiter of the process keeps the
// channel subscribed joins it before trying, and parks after one attempt;
// the first waiter needed two (before and after subscribing).
func TestWaitJoinsLocalWaiters(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	hub := pubsub.New(rdb, false)
	ch := redistest.UniqueName(t)
	var free atomic.Bool
	attempt := func(n *atomic.Int64) internal.Attempt {
		return func(context.Context) (bool, time.Duration, error) {
			n.Add(1)
			return free.Load(), 0, nil
		}
	}
	var first, second atomic.Int64
	errs := make(chan error, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	go func() { errs <- internal.Wait(ctx, hub, ch, time.Minute, attempt(&first)) }()
	redistest.WaitFor(t, 2*time.Second, func() bool { return first.Load() == 2 })
	go func() { errs <- internal.Wait(ctx, hub, ch, time.Minute, attempt(&second)) }()
	redistest.WaitFor(t, 2*time.Second, func() bool { return second.Load() >= 1 })
	time.Sleep(50 * time.Millisecond) // a second attempt would come within this
	if n := second.Load(); n != 1 {
		t.Fatalf("the joining waiter made %d attempts before parking, want 1", n)
	}
	if n := first.Load(); n != 2 {
		t.Fatalf("the first waiter made %d attempts before parking, want 2", n)
	}
	// Each release wakes one of them.
	free.Store(true)
	for range 2 {
		if err := rdb.Publish(ctx, ch, "1").Err(); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
