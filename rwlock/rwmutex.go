package rwlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
)

// ErrNotHeld is returned by RUnlock and Unlock when the handle does not
// hold the lock in that mode. It is the same value in every redisync
// package.
var ErrNotHeld = internal.ErrNotHeld

// ErrUpgradeNotSupported is returned by Lock and TryLock on a handle that
// holds a read lock but not the write lock: waiting for the write lock
// would wait for itself.
var ErrUpgradeNotSupported = internal.ErrUpgradeNotSupported

// ErrLost is the reason a hold was lost, passed to the WithOnLost hook.
var ErrLost = internal.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type, or for a lock of another kind.
var ErrWrongType = internal.ErrWrongType

// RWMutex is a distributed reader/writer mutual exclusion lock: many
// readers or one writer. An RWMutex is a handle with its own owner id: a
// handle that holds the lock in one mode re-enters it in that mode, and a
// write holder may also take read holds. Goroutines that must exclude each
// other use separate handles. An RWMutex is safe for concurrent use.
type RWMutex struct {
	rdb     redis.UniversalClient
	name    string
	keys    script.RWKeys
	owner   string
	sharded bool
	cfg     config
	// t is the handle's hold, in either mode or both (hold.Exclusive is
	// the write side, hold.Shared the read side): one hold, one watchdog
	// entry renewing whatever the handle holds, one Done.
	t *hold.Tracker
}

// New returns a handle on the read-write lock called name. It does no I/O.
// It panics if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *RWMutex {
	if rdb == nil {
		panic("rwlock: New with nil redis client")
	}
	if name == "" {
		panic("rwlock: New with empty lock name")
	}
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}}
	for _, o := range opts {
		o(&cfg)
	}
	n := internal.NewNames(name)
	owner := internal.NewOwnerID()
	rw := &RWMutex{
		rdb:  rdb,
		name: name,
		keys: script.RWKeys{
			Lock:          n.Lock(),
			Writers:       n.Writers(),
			ReaderPrefix:  n.ReaderPrefix(),
			Reader:        n.ReaderTimeout(owner),
			ReadChannel:   n.Channel(),
			WriterChannel: n.WriterChannel(),
		},
		owner:   owner,
		sharded: internal.Sharded(rdb),
		cfg:     cfg,
	}
	rw.t = hold.New(rw.tracking())
	return rw
}

// tracking describes the lock to its hold tracker.
func (rw *RWMutex) tracking() hold.Config {
	renew := func(ctx context.Context, s redis.Scripter) func() (bool, error) {
		return script.RWRenew(ctx, s, rw.keys, rw.owner, rw.cfg.Lease()).Result
	}
	return rw.cfg.Config(rw.rdb, rw.unlockScript, renew, func(err error) error { return rw.wrap("hold", err) })
}

// Name returns the name of the lock.
func (rw *RWMutex) Name() string { return rw.name }

// RLock locks rw for reading. It waits while another handle holds the write
// lock or a writer is waiting (see the package doc), until ctx is done. A
// handle that already holds a read lock re-enters it at once, as does the
// write holder. On failure RLock returns an error wrapping ctx.Err() or the
// Redis error, and leaves nothing behind: no hold, no subscription.
func (rw *RWMutex) RLock(ctx context.Context) error {
	c := internal.Acquire(rw.rdb)
	defer c.Release()
	try := func(ctx context.Context) (bool, time.Duration, error) {
		return rw.attempt(ctx, hold.Shared, false)
	}
	err := internal.Wait(ctx, c.Hub, rw.keys.ReadChannel, rw.cfg.Lease(), try)
	return rw.wrap("rlock", internal.CtxErr(ctx, err))
}

// TryRLock makes one attempt to lock rw for reading. It reports false and
// no error when the lock is write-locked by another handle or a writer is
// waiting.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	ok, _, err := rw.attempt(ctx, hold.Shared, false)
	return ok, rw.wrap("rlock", internal.CtxErr(ctx, err))
}

// Lock locks rw for writing. It waits until no other handle holds the lock
// in either mode, or until ctx is done. While it waits it announces itself,
// so that new readers wait behind it. A handle that holds the write lock
// re-enters it; a handle that holds only a read lock gets an error wrapping
// ErrUpgradeNotSupported at once. On failure Lock returns an error wrapping
// ctx.Err() or the Redis error, withdraws its announcement (waking the
// readers it held back) and leaves nothing behind.
func (rw *RWMutex) Lock(ctx context.Context) error {
	c := internal.Acquire(rw.rdb)
	defer c.Release()
	try := func(ctx context.Context) (bool, time.Duration, error) {
		return rw.attempt(ctx, hold.Exclusive, true)
	}
	// Every attempt renews the announcement, so no sleep may outlast a
	// third of its life. A refused upgrade is not transient: it ends the
	// wait at once.
	err := internal.Wait(ctx, c.Hub, rw.keys.WriterChannel, min(rw.cfg.Lease(), WriterPatience/3), try)
	if err != nil {
		rw.withdraw(ctx)
	}
	return rw.wrap("lock", internal.CtxErr(ctx, err))
}

// TryLock makes one attempt to lock rw for writing. It reports false and
// no error when another handle holds the lock in either mode; it does not
// announce itself. A handle that holds only a read lock gets an error
// wrapping ErrUpgradeNotSupported.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	ok, _, err := rw.attempt(ctx, hold.Exclusive, false)
	return ok, rw.wrap("lock", internal.CtxErr(ctx, err))
}

// attempt runs the acquire script of mode m once; announce makes a refused
// writer announce itself. An attempt whose outcome is unknown is undone by
// the tracker; an announcement it may have made is withdrawn by Lock.
func (rw *RWMutex) attempt(ctx context.Context, m hold.Mode, announce bool) (bool, time.Duration, error) {
	return rw.t.Attempt(ctx, m, func(ctx context.Context, held int64) (hold.Grant, error) {
		var cmd script.RWHoldsCmd
		if m == hold.Shared {
			cmd = script.RWReadLock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.Lease(), held)
		} else {
			cmd = script.RWWriteLock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.Lease(), held, announce, WriterPatience)
		}
		res, err := cmd.Result()
		g := hold.Grant{OK: res.OK, Levels: levels(res), Wait: res.Wait}
		if res.Upgrade {
			g.Refused = ErrUpgradeNotSupported
		}
		return g, err
	})
}

// unlockScript runs the release script of mode m once (see hold.Config).
func (rw *RWMutex) unlockScript(ctx context.Context, m hold.Mode, expect int64) (hold.Released, error) {
	var cmd script.RWHoldsCmd
	if m == hold.Shared {
		cmd = script.RWReadUnlock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.Lease(), rw.sharded, expect)
	} else {
		cmd = script.RWWriteUnlock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.Lease(), rw.sharded, expect)
	}
	res, err := cmd.Result()
	return hold.Released{Levels: levels(res), NotHeld: res.NotHeld, Mismatch: res.Mismatch}, err
}

// levels are the handle's hold levels a script reported.
func levels(res script.RWHolds) hold.Levels {
	return hold.Levels{hold.Exclusive: res.Writes, hold.Shared: res.Reads}
}

// withdraw removes the handle's announcement as a waiting writer, if any.
func (rw *RWMutex) withdraw(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hold.CleanupTimeout)
	defer cancel()
	_, _ = script.RWWithdraw(ctx, rw.rdb, rw.keys, rw.owner, rw.sharded).Result()
}

func (rw *RWMutex) wrap(op string, err error) error {
	return internal.Wrap("rwlock", op, rw.name, err)
}
