package rlock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
)

// New returns a handle on the lock called name. It does no I/O. It panics
// if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Mutex {
	b := hold.NewBase("rlock", rdb, name)
	cfg := newConfig(opts)
	if cfg.ackReplicas > 0 && !internal.CanPin(rdb) {
		panic(fmt.Sprintf("rlock: WithReplicaAck needs a *redis.Client or *redis.ClusterClient, not %T", rdb))
	}
	d := &described{Base: b, cfg: cfg, keys: script.LockKeys{Lock: b.Keys.Lock(), Fence: b.Keys.Fence(), Channel: b.Keys.Channel()}}
	m := &Mutex{}
	m.l = hold.NewLock(hold.Kind{
		Base: b, Keeping: cfg.Keeping, InLine: true,
		Acquire: func(ctx context.Context, _ hold.Mode, held int64, a hold.Asking) (hold.Grant, error) {
			return d.acquire(ctx, m.l.Tracker(), held, a)
		},
		Release:     d.release,
		Renew:       d.renew,
		ForceUnlock: d.forceUnlock,
		Channel:     func(hold.Mode) string { return d.keys.Channel },
	})
	m.engine = m.l.Handle(true)
	return m
}

// described is the lock as the engine sees it: its keys and scripts.
type described struct {
	hold.Base
	keys script.LockKeys
	cfg  config
}

// acquire runs the acquire script once. A waiter's retry after a clean
// refusal, by a handle that holds nothing, runs the script's cheap form:
// that refusal checked the owner and the type already. The script is
// never resent by go-redis, so a lost reply is an error the engine undoes,
// not a second run that would refuse the hold the first one took.
func (d *described) acquire(ctx context.Context, t *hold.Tracker, held int64, a hold.Asking) (hold.Grant, error) {
	var res script.Acquired
	var err error
	switch {
	case d.cfg.ackReplicas > 0:
		res, err = d.acquireAcked(ctx, t, held)
	case a.Refused && held == 0:
		res, err = script.ReentrantAcquireAgain(ctx, d.RDB, d.keys, d.Owner, d.cfg.Lease(), d.cfg.fencing).Result()
	default:
		res, err = script.ReentrantAcquire(ctx, d.RDB, d.keys, d.Owner, d.cfg.Lease(), d.cfg.fencing, held).Result()
	}
	return hold.Granted(res), err
}

func (d *described) release(ctx context.Context, _ hold.Mode, expect int64) (hold.Released, error) {
	n, err := script.ReentrantUnlock(ctx, d.RDB, d.keys, d.Owner, d.cfg.Lease(), d.Sharded, expect).Result()
	return hold.Unlocked(n), err
}

func (d *described) renew(ctx context.Context, s redis.Scripter) func() (bool, error) {
	return script.ReentrantRenew(ctx, s, d.keys.Lock, d.Owner, d.cfg.Lease()).Result
}

func (d *described) forceUnlock(ctx context.Context, receipt string) (bool, error) {
	return script.ReentrantForceUnlock(ctx, d.RDB, d.keys, receipt, internal.ReceiptTTL, d.Sharded).Result()
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.l.Name() }

// Lock locks m. If the lock is held (by another process or handle, or by
// another goroutine on this handle), Lock waits until it is released or its
// lease runs out, or until ctx is done; with a ctx that carries m's hold
// (see [Mutex.Do]) it re-enters the hold at once, one level deeper. On
// failure it returns an error wrapping ctx.Err() or the Redis error, and
// leaves nothing behind: no hold, no queue entry, no subscription.
func (m *Mutex) Lock(ctx context.Context) error { return m.l.Lock(ctx, hold.Exclusive) }

// TryLock makes one attempt to lock m. It reports false and no error when
// the lock is held; with a ctx that carries m's hold it re-enters it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.l.TryLock(ctx, hold.Exclusive) }
