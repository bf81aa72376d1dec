package hold_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// A renewal that finds the lock gone once the final release has run is
// no loss, however late after the release's reply it comes, until the
// release has ended the hold (see TestRenewalAfterReleaseReplyIsNoLoss).
// Here the watchdog's finding comes in the instant after the release has
// cleared its in-flight mark (hold.going) and before it ends the hold:
// the Lost hook runs for a hold its holder released. The old engine kept
// the release in flight until the hold had ended (settle, then released).
func TestRenewalBeforeReleaseEndsHoldIsNoLoss(t *testing.T) {
	var during func()
	f := newRenewedFake(t, time.Minute, func(*fake) {
		if during != nil {
			during()
		}
	})
	found := 0
	for i := 0; i < 300 && len(f.losses()) == 0; i++ {
		f.mustAcquire(t, hold.Exclusive)
		h := f.tracker.Current()
		var wg sync.WaitGroup
		during = func() {
			// The watchdog's end waits for the handle's mutex while the
			// release records its outcome, and has it next.
			unlock := f.tracker.HoldMu()
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(3 * time.Millisecond) // the release waits for mu: over a millisecond
				unlock()
				for f.tracker.Current() == h {
					if f.tracker.LoseIfReleased(h) {
						found++
						return
					}
				}
			}()
		}
		if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		during = nil
	}
	t.Logf("window hit in %d releases", found)
	if n := len(f.losses()); n > 0 {
		t.Errorf("the Lost hook ran %d times (window hit in %d releases) for holds their holder released: %v", n, found, f.losses())
	}
}
