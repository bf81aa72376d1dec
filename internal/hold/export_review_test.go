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
// claim), its base being now: through the local line, as a plain Lock,
// so that a claim that goes through has a holder with the line's units.
func ClaimGrant(ctx context.Context, x any, id string) (bool, error) {
	l := WatcherOf(x).h.l
	if !l.t.gate.TryAcquire(l.t.units) {
		return false, nil
	}
	ok, err := l.t.claim(ctx, Exclusive, 0, time.Now(), id, &intent{m: Exclusive, plain: true})
	if !ok {
		l.t.gate.Release(l.t.units)
	}
	return ok, err
}
