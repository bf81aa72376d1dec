package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// An Unlock that fails (Redis unreachable for a moment) must not leave the
// lock held for as long as the process lives: the handle stops renewing
// it, Done closes, and the lock frees itself within the lease even when
// Redis is reachable again at once.
func TestFailedUnlockStopsRenewal(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const lease = time.Second
		srv := redistest.SharedServer(t)
		name := redistest.UniqueName(t)
		proxy := redistest.NewProxy(t, srv.Addr())
		holder := p.new(proxy.NewClient(t), name, lease)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		proxy.Refuse(true)
		proxy.Cut()
		failed := time.Now()
		if err := holder.Unlock(t.Context()); err == nil {
			t.Fatal("Unlock through a refusing proxy succeeded")
		}
		if !isClosed(holder.Done()) {
			t.Error("Done still open after the last Unlock failed")
		}
		proxy.Refuse(false)

		ctx, cancel := context.WithTimeout(t.Context(), lease+3*time.Second)
		defer cancel()
		waiter := p.new(srv.NewClient(t), name, lease)
		if err := waiter.Lock(ctx); err != nil {
			t.Fatalf("the lock of a failed Unlock never freed: %v", err)
		}
		if d := time.Since(failed); d > lease+time.Second {
			t.Errorf("the lock freed %v after the failed Unlock, want within the lease", d)
		}
		if err := waiter.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
