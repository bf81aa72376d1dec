package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// A hold given up as lost owes the release of its levels once, however
// many of its callers give their level up after it (a release that
// could not have the handle's op, here with its ctx done). Each used to
// owe it again: harmless by id, a release that finds nothing, but one
// command more per caller, and a count of levels that stood for nothing.
func TestLostHoldOwesItsReleaseOnce(t *testing.T) {
	f := newRenewedFake(t, 300*time.Millisecond, nil)
	f.mustAcquire(t, hold.Exclusive)
	h := f.tracker.Current()
	f.mu.Lock()
	f.levels = hold.Levels{} // gone from "Redis": the watchdog finds it lost
	f.mu.Unlock()
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.Closed(f.tracker.Done()) })

	done, cancel := context.WithCancel(t.Context())
	cancel()
	_ = f.tracker.ReleaseOf(done, h, hold.Exclusive) // gives its level up without the op
	f.mu.Lock()
	before := len(f.calls)
	f.mu.Unlock()
	f.mustAcquire(t, hold.Exclusive) // sends what the handle owes first
	f.mu.Lock()
	sent := len(f.calls) - before
	f.mu.Unlock()
	if sent != 1 {
		t.Errorf("the lost hold's release was sent %d times; want once", sent)
	}
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
}
