package faulttest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// An Acquire whose take had its reply lost cancels it; when the
// cancellation's reply is lost too, a copy of it may still run within its
// deadline. No attempt may then report permits taken under that receipt:
// the copy, run after it, would give them back while the caller holds
// them. Here the copy is held back until Acquire has returned, and
// delivered within its window: every permit must stay taken.
func TestUndoCopyAfterAcquireReturned(t *testing.T) {
	direct, proxy, _ := redistest.ProxiedServer(t)
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = 500 * time.Millisecond })
	name := redistest.UniqueName(t)
	if err := semaphore.New(direct, name).SetPermits(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	proxy.DropReply(scriptOn(t, "semaphore_acquire.lua", name))
	held := proxy.Hold(scriptOn(t, "semaphore_undo.lua", name))
	s := semaphore.New(via, name, semaphore.WithPollInterval(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	defer cancel()
	if err := s.Acquire(ctx, 2); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	select {
	case <-held.Caught():
	case <-time.After(5 * time.Second):
		t.Fatal("no cancellation was held: the fault was not injected")
	}
	reply, err := held.Deliver(t.Context())
	if err != nil {
		t.Fatalf("delivering the cancellation's copy: %v", err)
	}
	if strings.Contains(reply, "LATE") {
		t.Skipf("the copy came after its deadline (%q): too slow to test the window", reply)
	}
	if n, err := semaphore.New(direct, name).Available(t.Context()); n != 0 || err != nil {
		t.Fatalf("after Acquire(2) of 2 and a copy of its cancellation (reply %q), Available = %d, %v; want 0: the copy gave back permits the caller holds", reply, n, err)
	}
	if err := s.Release(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
}
