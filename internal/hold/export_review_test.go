package hold

import (
	"context"
	"time"
)

// WaitID returns the hold id that the next wait of x's handle (x is a
// lock handle, such as an *rlock.Mutex) attempts, and is granted, under.
func WaitID(x any) string { return WatcherOf(x).h.l.t.waitID(nil) }

// ClaimGrant completes a grant of the exclusive level to hold id, as a
// parked wait of x's handle does on the grant's message (Lock.wait's
// claim), its base being now.
func ClaimGrant(ctx context.Context, x any, id string) (bool, error) {
	return WatcherOf(x).h.l.t.claim(ctx, Exclusive, 0, time.Now(), id, nil)
}
