package hold_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// A hold that ends (here force-unlocked by another handle, found by the
// watchdog) makes the handle's goroutines forget their holds in the same
// step: were it later, the deferred Unlock of the forgotten hold would
// give its unit of the local line back, the next Lock would take a new
// hold, and the late forgetting would drop that new hold too and let a
// third call re-enter it in Redis: two goroutines holding, and the lock
// left held after both Unlocks. A hold's records are live exactly while
// it is the Tracker's current hold, and it stops being current in the
// critical section that forgets them, so there is no such window to
// widen any more; the scenario stays.
func TestHoldEndForgetsAtOnce(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	m := rlock.New(srv.NewClient(t), name, rlock.WithWatchdogTimeout(1500*time.Millisecond))

	if err := m.Lock(ctx); err != nil { // goroutine A
		t.Fatal(err)
	}
	if _, err := rlock.New(admin, name).ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.Closed(m.Done()) })
	_ = m.Unlock(ctx) // A's deferred Unlock: its hold was lost

	if err := m.Lock(ctx); err != nil { // goroutine B: a new hold
		t.Fatal(err)
	}
	if ok, err := m.TryLock(ctx); ok || err != nil { // goroutine C
		t.Fatalf("TryLock while B holds = %v, %v; want false: two holders", ok, err)
	}
	if err := m.Unlock(ctx); err != nil { // B
		t.Fatalf("B's Unlock: %v", err)
	}
	if locked, err := m.IsLocked(ctx); locked || err != nil {
		t.Fatalf("IsLocked after B's Unlock = %v, %v; want free", locked, err)
	}
}
