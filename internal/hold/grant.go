package hold

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/watchdog"
)

// GrantLease is how long a grantee keeps the lock before its process claims
// it, unless its own is shorter (Kind.GrantLease): a dead one blocks the
// line that long.
const GrantLease = 3 * time.Second

// grantLease is a grant's lease on the server, in whole milliseconds.
func (c *Config) grantLease() time.Duration {
	if c.GrantLease > 0 {
		return min(c.GrantLease.Truncate(time.Millisecond), GrantLease)
	}
	return GrantLease
}

// claim completes without a round trip a hold of one level of mode m that a
// release granted to id. base is when the waiter's last refused attempt, or
// a later refresh that found its place (perclient.Kept.Base), was sent: the
// grant came after, so its lease runs at least until base plus the grant
// lease. The hold is valid from base for the shorter of that and its own
// lease until its first renewal, lest a renewal whose reply is lost leave
// the local validity beyond what it set.
//
// It reports false, changing nothing, when an acquire attempt must complete
// the grant: a fixed lease, no base, under a quarter of the validity left,
// a level of m held, or id retired. With ctx done it gives the grant back,
// as Take does, and returns ctx's error.
func (t *Tracker) claim(ctx context.Context, m Mode, token uint64, base time.Time, id string, in *intent) (bool, error) {
	if err := ctx.Err(); err != nil {
		t.Undo(ctx, m, id)
		return false, err
	}
	lease := min(t.cfg.grantLease(), t.cfg.Lease)
	if t.cfg.Renew == nil || base.IsZero() || time.Until(watchdog.ValidUntil(base, lease)) < lease/4 {
		return false, nil
	}
	if err := t.op.Acquire(ctx, 1); err != nil {
		return false, err
	}
	defer t.op.Release(1)
	if t.Held(m) {
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
