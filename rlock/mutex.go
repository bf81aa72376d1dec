package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
)

// ErrNotHeld is returned by Unlock when the handle does not hold the lock.
// It is the same value in every redisync package.
var ErrNotHeld = internal.ErrNotHeld

// ErrLost is the reason a hold was lost, passed to the WithOnLost hook.
var ErrLost = internal.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type, or for a read-write lock's name (see package rwlock).
var ErrWrongType = internal.ErrWrongType

// Mutex is a reentrant distributed mutex. A Mutex is a handle with its own
// owner id: Lock on a handle that holds the lock re-enters it. Goroutines
// that must exclude each other use separate handles. A Mutex is safe for
// concurrent use.
type Mutex struct {
	rdb     redis.UniversalClient
	name    string
	keys    script.LockKeys
	owner   string
	sharded bool
	cfg     config
	t       *hold.Tracker // the handle's hold
}

// New returns a handle on the lock called name. It does no I/O. It panics
// if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Mutex {
	if rdb == nil {
		panic("rlock: New with nil redis client")
	}
	if name == "" {
		panic("rlock: New with empty lock name")
	}
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ackReplicas > 0 && !internal.CanPin(rdb) {
		panic(fmt.Sprintf("rlock: WithReplicaAck needs a *redis.Client or *redis.ClusterClient, not %T", rdb))
	}
	n := internal.NewNames(name)
	m := &Mutex{
		rdb:     rdb,
		name:    name,
		keys:    script.LockKeys{Lock: n.Lock(), Fence: n.Fence(), Channel: n.Channel()},
		owner:   internal.NewOwnerID(),
		sharded: internal.Sharded(rdb),
		cfg:     cfg,
	}
	m.t = hold.New(m.tracking())
	return m
}

// tracking describes the lock to its hold tracker.
func (m *Mutex) tracking() hold.Config {
	release := func(ctx context.Context, _ hold.Mode, expect int64) (hold.Released, error) {
		n, err := script.ReentrantUnlock(ctx, m.rdb, m.keys, m.owner, m.cfg.Lease(), m.sharded, expect).Result()
		return hold.Unlocked(n), err
	}
	renew := func(ctx context.Context, s redis.Scripter) func() (bool, error) {
		return script.ReentrantRenew(ctx, s, m.keys.Lock, m.owner, m.cfg.Lease()).Result
	}
	return m.cfg.Config(m.rdb, release, renew, func(err error) error { return m.wrap("hold", err) })
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.name }

// Lock locks m. If the lock is held by another handle, Lock waits until it
// is released or its lease runs out, or until ctx is done. On failure it
// returns an error wrapping ctx.Err() or the Redis error, and leaves nothing
// behind: no hold, no queue entry, no subscription.
func (m *Mutex) Lock(ctx context.Context) error {
	c := internal.Acquire(m.rdb)
	defer c.Release()
	// refused: the last attempt of this wait was refused without error,
	// so the next one may skip the checks that attempt made.
	refused := false
	// A handle that holds nothing queues behind the process's parked
	// waiters; one that holds the lock re-enters at once.
	inLine := func() bool { return m.t.Held(hold.Exclusive) == 0 }
	err := internal.WaitInLine(ctx, c.Hub, m.keys.Channel, m.cfg.Lease(), inLine, func(ctx context.Context) (bool, time.Duration, error) {
		return m.try(ctx, &refused)
	})
	return m.wrap("lock", err)
}

// TryLock makes one attempt to lock m. It reports false and no error when
// another handle holds the lock.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	ok, _, err := m.try(ctx, nil)
	return ok, m.wrap("lock", internal.CtxErr(ctx, err))
}

// try runs the acquire script once. An attempt whose outcome is unknown is
// undone by the tracker. refused, for a Lock, tells whether the previous
// attempt of the same wait was refused without error, and records whether
// this one was; such a retry by a handle that holds nothing runs the
// script's cheap form (script.ReentrantAcquireAgain).
func (m *Mutex) try(ctx context.Context, refused *bool) (bool, time.Duration, error) {
	return m.t.Attempt(ctx, hold.Exclusive, func(ctx context.Context, holds int64) (hold.Grant, error) {
		var res script.Acquired
		var err error
		switch {
		case m.cfg.ackReplicas > 0:
			res, err = m.acquireAcked(ctx, holds)
		case refused != nil && *refused && holds == 0:
			res, err = script.ReentrantAcquireAgain(ctx, m.rdb, m.keys, m.owner, m.cfg.Lease(), m.cfg.fencing).Result()
		default:
			res, err = script.ReentrantAcquire(ctx, m.rdb, m.keys, m.owner, m.cfg.Lease(), m.cfg.fencing, holds).Result()
		}
		if refused != nil {
			*refused = err == nil && !res.OK
		}
		return hold.Granted(res), err
	})
}
