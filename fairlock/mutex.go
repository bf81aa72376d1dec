package fairlock

import (
	"context"
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

// Mutex is a fair (first come, first served) reentrant distributed mutex.
// A Mutex is a handle with its own owner id: Lock on a handle that holds
// the lock re-enters it. Goroutines that must exclude each other use
// separate handles. A Mutex is safe for concurrent use.
type Mutex struct {
	rdb     redis.UniversalClient
	name    string
	keys    script.FairKeys
	channel string // this handle's wake-up channel
	owner   string
	sharded bool
	cfg     config
	t       *hold.Tracker // the handle's hold
}

// New returns a handle on the lock called name. It does no I/O. It panics
// if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Mutex {
	if rdb == nil {
		panic("fairlock: New with nil redis client")
	}
	if name == "" {
		panic("fairlock: New with empty lock name")
	}
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}, waiterTimeout: DefaultWaiterTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	n := internal.NewNames(name)
	owner := internal.NewOwnerID()
	m := &Mutex{
		rdb:  rdb,
		name: name,
		keys: script.FairKeys{
			Lock:     n.Lock(),
			Queue:    n.Queue(),
			Timeouts: n.Timeouts(),
			Fence:    n.Fence(),
			Waiter:   n.WaiterChannel(""),
		},
		channel: n.WaiterChannel(owner),
		owner:   owner,
		sharded: internal.Sharded(rdb),
		cfg:     cfg,
	}
	m.t = hold.New(m.tracking())
	return m
}

// tracking describes the lock to its hold tracker.
func (m *Mutex) tracking() hold.Config {
	release := func(ctx context.Context, _ hold.Mode, expect int64) (hold.Released, error) {
		n, err := script.FairUnlock(ctx, m.rdb, m.keys, m.owner, m.cfg.Lease(), m.sharded, expect).Result()
		return hold.Unlocked(n), err
	}
	renew := func(ctx context.Context, s redis.Scripter) func() (bool, error) {
		return script.FairRenew(ctx, s, m.keys, m.owner, m.cfg.Lease(), m.sharded).Result
	}
	return m.cfg.Config(m.rdb, release, renew, func(err error) error { return m.wrap("hold", err) })
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.name }

// Lock locks m. If the lock is held by another handle, or other handles
// already wait for it, Lock joins the end of the line and waits until every
// waiter before it has had its turn and the lock is released, or until ctx
// is done. While it waits it keeps its place alive (see WithWaiterTimeout).
// On failure it returns an error wrapping ctx.Err() or the Redis error, and
// leaves nothing behind: no hold, no place in line, no subscription; the
// waiter behind it moves up and, if the lock is free, is woken.
func (m *Mutex) Lock(ctx context.Context) error {
	c := internal.Acquire(m.rdb)
	defer c.Release()
	err := internal.Wait(ctx, c.Hub, m.channel, m.cfg.maxSleep(), m.waitInLine)
	if err != nil {
		m.leave(ctx)
	}
	return m.wrap("lock", err)
}

// TryLock makes one attempt to lock m. It reports false and no error when
// another handle holds the lock or waits for it: TryLock never jumps the
// line, and never joins it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	ok, _, err := m.attempt(ctx, 0)
	return ok, m.wrap("lock", internal.CtxErr(ctx, err))
}

// waitInLine is the attempt of a waiting Lock: it joins the line or
// refreshes its place there.
func (m *Mutex) waitInLine(ctx context.Context) (bool, time.Duration, error) {
	return m.attempt(ctx, m.cfg.waiterTimeout)
}

// attempt runs the acquire script once; with patience > 0 the handle joins
// or keeps its place in line when it does not get the lock. An attempt
// whose outcome is unknown is undone by the tracker; a place in line it
// may have taken is left by Lock.
func (m *Mutex) attempt(ctx context.Context, patience time.Duration) (bool, time.Duration, error) {
	return m.t.Attempt(ctx, hold.Exclusive, func(ctx context.Context, holds int64) (hold.Grant, error) {
		res, err := script.FairAcquire(ctx, m.rdb, m.keys, m.owner, m.cfg.Lease(), m.cfg.fencing, holds, patience, m.sharded).Result()
		return hold.Granted(res), err
	})
}

// leave takes the handle out of the line after a failed Lock. The caller's
// ctx is usually done, so the call runs without its cancellation; a failed
// call is tried once more. If both fail (Redis unreachable), the place is
// dropped by the server once its deadline passes.
func (m *Mutex) leave(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for range 2 {
		lctx, cancel := context.WithTimeout(ctx, hold.CleanupTimeout/2)
		_, err := script.FairLeave(lctx, m.rdb, m.keys, m.owner, m.sharded).Result()
		cancel()
		if err == nil || internal.IsWrongType(err) {
			return
		}
	}
}
