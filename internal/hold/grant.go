package hold

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/watchdog"
)

// GrantLease is the lease of a grant: how long a waiter that a release
// made the holder keeps the lock before its process completes the hold
// (see the package doc), unless the waiter's is shorter (Kind.GrantLease).
// A grantee whose process died blocks the waiters behind it for at most
// this long. Parked waiters' places in line are refreshed by their
// client's keeper every second (see Kind.Place).
const GrantLease = 3 * time.Second

// grantLease is how long a grant to the handle lasts on the server, in
// whole milliseconds as the scripts have it.
func (c *Config) grantLease() time.Duration {
	if c.GrantLease > 0 {
		return min(c.GrantLease.Truncate(time.Millisecond), GrantLease)
	}
	return GrantLease
}

// claim completes, without a round trip, a hold of one level of mode m
// that a release granted to the handle, with fencing token token (0
// without fencing). base is when the waiter's last attempt, refused
// without error and not followed by another, was sent, or a later
// refresh of its place that found it there (see perclient.Kept.Base): the
// grant came after that ran, so the server's grant lease runs at least until
// base plus the handle's grant lease (GrantLease, or Config.GrantLease).
// The hold's validity is counted from base with the
// shorter of the grant lease and the hold's own lease until its first
// renewal: a renewal sets the hold's own lease, and one whose reply is
// lost must not leave the local validity beyond what it set.
//
// claim reports false, changing nothing, when the grant must be completed
// by an acquire attempt instead: the hold has a fixed lease (the grant's
// lease is not its own), no base is known, less than a quarter of that
// validity is left, or the handle somehow holds a level of m already.
// When ctx is done the grant is given back, as Take gives back a grant
// read after ctx ended: the release script releases the level, which
// grants the lock to the next waiter; claim returns ctx's error. (A
// grant whose message never reached a waiter that gave up is found by its
// Kind.Leave, and given back by the wait's hold id.) The level is
// recorded through in (see intent) as the hold begins.
func (t *Tracker) claim(ctx context.Context, m Mode, token uint64, base time.Time, id string, in *intent) (bool, error) {
	if err := ctx.Err(); err != nil {
		t.Undo(ctx, m, id)
		return false, err
	}
	// The hold's first validity is the shorter of the grant lease and its
	// own: a renewal sets its own lease, and one whose reply is lost must
	// not leave the local validity beyond what it set on the server.
	lease := min(t.cfg.grantLease(), t.cfg.Lease)
	if t.cfg.Renew == nil || base.IsZero() || time.Until(watchdog.ValidUntil(base, lease)) < lease/4 {
		return false, nil
	}
	if err := t.op.Acquire(ctx, 1); err != nil {
		return false, err
	}
	defer t.op.Release(1)
	if t.Held(m) != 0 {
		return false, nil
	}
	if in == nil {
		in = &intent{m: m, plain: true}
	}
	if t.begin(id, token, base, lease, 0, in) == nil {
		return false, nil // id retired: an attempt under a new one finds the lock
	}
	return true, nil
}
