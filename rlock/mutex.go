package rlock

import (
	"context"
	"fmt"
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
	b := hold.NewBase("rlock", rdb, name)
	cfg := newConfig(opts)
	if cfg.ackReplicas > 0 && !perclient.CanPin(rdb) {
		panic(fmt.Sprintf("rlock: WithReplicaAck needs a *redis.Client or *redis.ClusterClient, not %T", rdb))
	}
	n := b.Keys
	d := &described{Base: b, cfg: cfg, keys: script.LockKeys{
		Lock: n.Lock(), Fence: n.Fence(), Queue: n.Queue(), Places: n.Place(""), Waiter: n.WaiterChannel(""), Channel: n.Channel(), Patience: WaiterTimeout,
		Others: n.Others(keyspace.KindMutex),
	}}
	// Built once: every Lock would build them again, found free or not.
	channel, place, queue := n.WaiterChannel(b.Owner), n.Place(b.Owner), n.Queue()
	m := &Mutex{}
	m.l = hold.NewLock(hold.Kind{
		Base: b, Keeping: cfg.Keeping,
		Acquire: func(ctx context.Context, _ hold.Mode, a hold.Asking) (hold.Grant, error) {
			return d.acquire(ctx, m.l.Tracker(), a)
		},
		Release:     d.release,
		Renew:       d.renew,
		ForceUnlock: d.forceUnlock,
		Leave:       d.leave,
		// Each waiter has a place in line and a channel of its own, on
		// which a release grants it the lock. With WithReplicaAck a grant
		// is completed by an acquire attempt, which waits for replicas.
		Grants: true, Fencing: cfg.fencing, ClaimByAttempt: cfg.ackReplicas > 0,
		// Goroutines sharing the handle may pass its hold on without a
		// round trip, unless each hold needs something of its own from
		// Redis: a fencing token, a fixed lease, acknowledging replicas.
		LocalHandoff: !cfg.fencing && cfg.LeaseTime == 0 && cfg.ackReplicas == 0,
		Channel:      func(hold.Mode) string { return channel },
		// Parked waiters' places are kept by their client's keeper, in
		// one pipeline a second for all of them.
		Place: func(hold.Mode) *perclient.Place {
			return &perclient.Place{Key: place, TTL: WaiterTimeout, Lock: d.keys.Lock, Queue: queue}
		},
	})
	// A release that frees the lock with nobody in line is announced on
	// the shared channel, for groups of locks (package multilock), when
	// one of them watches (hold.Watcher.Watch).
	m.engine = m.l.Handle(n.Channel())
	return m
}

// WaiterTimeout is how long a waiter's place in line outlives its last
// refresh: a waiter whose process died is dropped from the line (and is no
// longer granted the lock) this long after. It is the grant lease, so that
// a release that grants the lock to a dead waiter finds the places of the
// waiters that died with it lapsed by the time that grant runs out:
// several dead waiters at the head of the line cost one grant lease, not
// one each. The client's keeper refreshes the places of its parked
// waiters every second, so a live waiter never lapses unless its client
// cannot reach Redis for that long.
const WaiterTimeout = hold.GrantLease

// described is the lock as the engine sees it: its keys and scripts.
type described struct {
	hold.Base
	keys script.LockKeys
	cfg  config
}

// acquire runs the acquire script once; a blocking attempt that finds the
// lock held joins the line or keeps its place there. The script is never
// resent by go-redis, so a lost reply is an error the engine undoes, not a
// second run that would refuse the hold the first one took.
func (d *described) acquire(ctx context.Context, t *hold.Tracker, a hold.Asking) (hold.Grant, error) {
	var patience time.Duration
	if a.Blocking {
		patience = WaiterTimeout
	}
	var res script.Acquired
	var err error
	if d.cfg.ackReplicas > 0 {
		res, err = d.acquireAcked(ctx, t, patience, a)
	} else {
		res, err = script.ReentrantTake(ctx, d.RDB, d.keys, script.TakeArgs{
			ID: a.ID, Lease: d.cfg.Lease(), Fencing: d.cfg.fencing, Patience: patience,
			Deadline: a.Deadline, Placed: a.Placed, Watched: a.Watched, Seq: a.Seq,
		}).Result()
	}
	return hold.Granted(res), err
}

func (d *described) release(ctx context.Context, _ hold.Mode, id string, _ uint64, _ bool) (hold.Released, error) {
	u, err := script.ReentrantUnlock(ctx, d.RDB, d.keys, script.ReleaseArgs{ID: id, Lease: d.cfg.Lease(), Sharded: d.Sharded, GrantLease: hold.GrantLease}).Result()
	return hold.UnlockedGrant(u), err
}

// leave takes the handle out of the line after a failed Lock, and
// reports whether a release granted it the lock meanwhile.
func (d *described) leave(ctx context.Context, _ hold.Mode, a hold.Asking) (bool, error) {
	n, err := script.ReentrantLeave(ctx, d.RDB, d.keys, a.ID).Result()
	return n == script.LeftGranted, err
}

func (d *described) renew(ctx context.Context, s redis.Scripter, id string) func() (bool, error) {
	return hold.Renewal(script.ReentrantRenew(ctx, s, d.keys.Lock, id, d.cfg.Lease()))
}

func (d *described) forceUnlock(ctx context.Context, receipt string, aim []any) (int64, error) {
	return script.ReentrantForceUnlock(ctx, d.RDB, d.keys, receipt, exactly.ReceiptTTL, d.Sharded, aim).Result()
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.l.Name() }

// Lock locks m. If the lock is held (by another process or handle, or by
// another goroutine on this handle), Lock waits until it is released or its
// lease runs out, or until ctx is done; with a ctx that carries m's hold
// (see [Mutex.Do]) it re-enters the hold at once, one level deeper. On
// failure it returns an error wrapping ctx.Err() or the Redis error, and
// leaves nothing behind: no hold, no queue entry, no subscription. A Lock
// that waited behind a hold of m itself (a second m.Lock(ctx) from the
// goroutine that holds) says so in its error, and how to re-enter.
func (m *Mutex) Lock(ctx context.Context) error { return m.l.Lock(ctx, hold.Exclusive) }

// TryLock makes one attempt to lock m. It reports false and no error when
// the lock is held; with a ctx that carries m's hold it re-enters it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.l.TryLock(ctx, hold.Exclusive) }
