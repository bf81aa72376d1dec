package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// A renewal that finds the lock gone after the final release's reply was
// read, before the release has recorded it, is no loss either: the
// release ended the hold. The window is where the release tells a waiter
// of the process of its grant (Config.Granted), held open here until the
// watchdog has found the lock gone. The release used to stop counting as
// in flight before that, and the renewal's finding was reported to the
// Lost hook for a hold its holder had released.
func TestRenewalAfterReleaseReplyIsNoLoss(t *testing.T) {
	var f *fake
	f = newRenewedFake(t, 300*time.Millisecond, nil, func(c *hold.Config) {
		release := c.Release
		c.Release = func(ctx context.Context, m hold.Mode, id string, tag uint64, giveBack bool) (hold.Released, error) {
			out, err := release(ctx, m, id, tag, giveBack)
			out.Grantee = "waiter" // the release granted the lock on
			return out, err
		}
		c.Granted = func(string, script.Grant, time.Time) {
			redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.Closed(f.tracker.Done()) })
		}
	})
	f.mustReleaseWithoutLoss(t)
}
