package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 1: the holder process is SIGKILLed. Its lock must be free within
// the watchdog timeout plus one second.
func TestKilledHolderFreesLock(t *testing.T) {
	forEachLeased(t, func(t *testing.T, p primitive) {
		const lease = 2 * time.Second
		srv := redistest.SharedServer(t)
		name := redistest.UniqueName(t)
		h := redistest.StartHelper(t, "hold", helperArgs(p, srv.Addr(), name, lease)...)
		if line := h.Next(t, 20*time.Second); line != "held" {
			t.Fatalf("helper wrote %q, want held", line)
		}
		waiter := p.new(srv.NewClient(t), name, lease)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()

		// While the helper lives its watchdog keeps the lock past its lease.
		select {
		case err := <-got:
			t.Fatalf("waiter returned (%v) while the holder process was alive", err)
		case <-time.After(lease + 300*time.Millisecond):
		}

		killed := time.Now()
		h.Kill()
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(lease + 3*time.Second):
			t.Fatal("lock of the killed holder never became free")
		}
		took := time.Since(killed)
		t.Logf("lock free %v after SIGKILL (lease %v)", took.Round(time.Millisecond), lease)
		if took > lease+time.Second {
			t.Errorf("lock free %v after SIGKILL, want within lease + 1s = %v", took, lease+time.Second)
		}
		if err := waiter.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
