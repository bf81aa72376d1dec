package rwlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/lua"
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

// cleanupTimeout bounds the calls that tidy up after a cancelled ctx.
const cleanupTimeout = time.Second

// mode is one of the two ways to hold the lock.
type mode bool

const (
	read  mode = false
	write mode = true
)

// RWMutex is a distributed reader/writer mutual exclusion lock: many
// readers or one writer. An RWMutex is a handle with its own owner id: a
// handle that holds the lock in one mode re-enters it in that mode, and a
// write holder may also take read holds. Goroutines that must exclude each
// other use separate handles. An RWMutex is safe for concurrent use.
type RWMutex struct {
	rdb     redis.UniversalClient
	name    string
	keys    lua.RWKeys
	owner   string
	sharded bool
	cfg     config

	// op serializes this handle's state-changing scripts, so that the local
	// view of the hold matches Redis. It is taken for one round trip, never
	// across a wait.
	op *semaphore.Weighted

	mu   sync.Mutex // protects hold and its counts
	hold *hold      // the current hold, in either or both modes; nil when none
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
	cfg := config{watchdogTimeout: DefaultWatchdogTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	n := internal.NewNames(name)
	owner := internal.NewOwnerID()
	return &RWMutex{
		rdb:  rdb,
		name: name,
		keys: lua.RWKeys{
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
		op:      semaphore.NewWeighted(1),
	}
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
		return rw.attempt(ctx, read, false)
	}
	err := internal.Wait(ctx, c.Hub, rw.keys.ReadChannel, rw.cfg.lease(), try)
	return rw.wrap("rlock", err)
}

// TryRLock makes one attempt to lock rw for reading. It reports false and
// no error when the lock is write-locked by another handle or a writer is
// waiting.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	ok, _, err := rw.attempt(ctx, read, false)
	return ok, rw.wrap("rlock", err)
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
	// A refused upgrade ends the wait at once: the attempt cancels the
	// wait's ctx with the refusal as the cause, since the wait loop keeps
	// retrying errors that are not Redis' own replies.
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	try := func(ctx context.Context) (bool, time.Duration, error) {
		ok, wait, err := rw.attempt(ctx, write, true)
		if errors.Is(err, ErrUpgradeNotSupported) {
			stop(err)
			return false, 0, wctx.Err()
		}
		return ok, wait, err
	}
	// Every attempt renews the announcement, so no sleep may outlast a
	// third of its life.
	err := internal.Wait(wctx, c.Hub, rw.keys.WriterChannel, min(rw.cfg.lease(), WriterPatience/3), try)
	if cause := context.Cause(wctx); ctx.Err() == nil && errors.Is(cause, ErrUpgradeNotSupported) {
		return rw.wrap("lock", cause)
	}
	if err != nil {
		rw.withdraw(ctx)
	}
	return rw.wrap("lock", err)
}

// TryLock makes one attempt to lock rw for writing. It reports false and
// no error when another handle holds the lock in either mode; it does not
// announce itself. A handle that holds only a read lock gets an error
// wrapping ErrUpgradeNotSupported.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	ok, _, err := rw.attempt(ctx, write, false)
	return ok, rw.wrap("lock", err)
}

// attempt runs the acquire script of mode m once.
func (rw *RWMutex) attempt(ctx context.Context, m mode, announce bool) (bool, time.Duration, error) {
	if err := rw.op.Acquire(ctx, 1); err != nil {
		return false, 0, err
	}
	defer rw.op.Release(1)
	holds := rw.count(m)
	sent := time.Now()
	var cmd lua.RWHoldsCmd
	if m == read {
		cmd = lua.RWLockRLock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.lease(), holds)
	} else {
		cmd = lua.RWLockLock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.lease(), holds, announce, WriterPatience)
	}
	res, err := cmd.Result()
	switch {
	case err != nil:
		if ctx.Err() != nil {
			// The script may have run: give back what it may have taken.
			rw.undo(ctx, m, holds+1)
		}
		return false, 0, err
	case res.Upgrade:
		return false, 0, ErrUpgradeNotSupported
	case !res.OK:
		return false, res.Wait, nil
	}
	rw.acquired(res.Reads, res.Writes, sent)
	return true, 0, nil
}

// undo releases the level of mode m that an attempt with an unknown outcome
// may have taken. The unlock script changes nothing unless the hold count
// is exactly the one the attempt would have produced.
func (rw *RWMutex) undo(ctx context.Context, m mode, expect int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	// The local view is untouched: it was not updated for the attempt.
	_, _ = rw.unlockCmd(ctx, m, expect).Result()
}

// withdraw removes the handle's announcement as a waiting writer, if any.
func (rw *RWMutex) withdraw(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = lua.RWLockWithdraw(ctx, rw.rdb, rw.keys, rw.owner, rw.sharded).Result()
}

// unlockCmd runs the release script of mode m.
func (rw *RWMutex) unlockCmd(ctx context.Context, m mode, expect int64) lua.RWHoldsCmd {
	if m == read {
		return lua.RWLockRUnlock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.lease(), rw.sharded, expect)
	}
	return lua.RWLockUnlock(ctx, rw.rdb, rw.keys, rw.owner, rw.cfg.lease(), rw.sharded, expect)
}

func (rw *RWMutex) wrap(op string, err error) error {
	return internal.Wrap("rwlock", op, rw.name, err)
}
