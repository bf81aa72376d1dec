package fairlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// New returns a handle on the lock called name. It does no I/O. It panics
// if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Mutex {
	b := hold.NewBase("fairlock", rdb, name)
	cfg := newConfig(opts)
	n := b.Keys
	l := &line{Base: b, cfg: cfg, keys: script.FairKeys{
		Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place(""),
		Others: n.Others(keyspace.KindMutex),
	}}
	m := &Mutex{l: hold.NewLock(hold.Kind{
		Base: b, Keeping: cfg.Keeping,
		Acquire: l.acquire, Release: l.release, Renew: l.renew, ForceUnlock: l.forceUnlock, Leave: l.leave,
		// Each waiter has a channel of its own, on which a release grants
		// it the lock, for no longer than its waiter timeout.
		Grants: true, Fencing: cfg.fencing, GrantLease: cfg.grantLease(),
		Channel:  func(hold.Mode) string { return n.WaiterChannel(b.Owner) },
		MaxSleep: cfg.maxSleep(),
		// The client's keeper keeps parked waiters' places (a grant goes
		// only to a waiter whose place is there) once a second; their
		// deadlines in line, server time, are kept by their attempts, at
		// least every third of the waiter timeout.
		Place: func(hold.Mode) *perclient.Place {
			return &perclient.Place{Key: n.Place(b.Owner), TTL: cfg.grantLease(), Lock: n.Lock()}
		},
	})}
	// Not announced: a group of locks cannot sleep on the head's channel.
	m.engine = m.l.Handle("")
	return m
}

// line is the lock as the engine sees it: a hash of holders and a line of
// waiters, each with a deadline its attempts keep refreshing.
type line struct {
	hold.Base
	keys script.FairKeys
	cfg  config
}

// acquire runs the acquire script once; a blocking attempt joins the line
// or keeps its place there when it does not get the lock, for the waiter
// timeout. A place it may have taken when its outcome is unknown is left
// by leave.
func (l *line) acquire(ctx context.Context, _ hold.Mode, a hold.Asking) (hold.Grant, error) {
	var patience time.Duration
	if a.Blocking {
		patience = l.cfg.waiterTimeout
	}
	res, err := script.FairTake(ctx, l.RDB, l.keys, script.FairTakeArgs{
		ID: a.ID, Lease: l.cfg.Lease(), Fencing: l.cfg.fencing, Patience: patience,
		Sharded: l.Sharded, GrantLease: hold.GrantLease, Deadline: a.Deadline, Seq: a.Seq,
	}).Result()
	return hold.Granted(res), err
}

func (l *line) release(ctx context.Context, _ hold.Mode, id string, _ uint64, _ bool) (hold.Released, error) {
	u, err := script.FairUnlock(ctx, l.RDB, l.keys, script.ReleaseArgs{ID: id, Lease: l.cfg.Lease(), Sharded: l.Sharded, GrantLease: hold.GrantLease}).Result()
	return hold.UnlockedGrant(u), err
}

func (l *line) renew(ctx context.Context, s redis.Scripter, id string) func() (bool, error) {
	return hold.Renewal(script.FairRenew(ctx, s, l.keys, id, l.cfg.Lease(), l.Sharded))
}

func (l *line) forceUnlock(ctx context.Context, receipt string, aim []any) (int64, error) {
	return script.FairForceUnlock(ctx, l.RDB, l.keys, receipt, exactly.ReceiptTTL, l.Sharded, aim).Result()
}

// leave takes the handle out of the line after a failed Lock, if its
// place is still the wait's (a.ID), and reports whether a release granted
// a.ID the lock meanwhile.
func (l *line) leave(ctx context.Context, _ hold.Mode, a hold.Asking) (bool, error) {
	n, err := script.FairLeave(ctx, l.RDB, l.keys, a.ID, l.Sharded).Result()
	return n == script.LeftGranted, err
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.l.Name() }

// Lock locks m (with a ctx that carries m's hold, see Do, it re-enters it
// at once). If the lock is held, or others already wait for it, Lock joins the end of the line and waits until every
// waiter before it has had its turn and the lock is released, or until ctx
// is done. While it waits it keeps its place alive (see WithWaiterTimeout).
// On failure it returns an error wrapping ctx.Err() or the Redis error, and
// leaves nothing behind: no hold, no place in line, no subscription; the
// waiter behind it moves up and, if the lock is free, is woken.
func (m *Mutex) Lock(ctx context.Context) error { return m.l.Lock(ctx, hold.Exclusive) }

// TryLock makes one attempt to lock m. It reports false and no error when
// another handle holds the lock or waits for it: TryLock never jumps the
// line, and never joins it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.l.TryLock(ctx, hold.Exclusive) }
