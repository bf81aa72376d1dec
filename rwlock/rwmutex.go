package rwlock

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
)

// New returns a handle on the read-write lock called name. It does no I/O.
// It panics if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *RWMutex {
	b := hold.NewBase("rwlock", rdb, name)
	s := &sides{Base: b, cfg: newConfig(opts), keys: b.Keys.RWKeys()}
	rw := &RWMutex{s: s, l: hold.NewLock(hold.Kind{
		Base: b, Keeping: s.cfg.Keeping, Modes: 2, Channel: s.channel, Place: s.announcement,
		Acquire: s.acquire, Release: s.release, Renew: s.renew, ForceUnlock: s.forceUnlock, Leave: s.withdraw,
	})}
	// A release that frees the lock wakes a writer on its channel.
	rw.engine = rw.l.Handle(s.channel(hold.Exclusive))
	return rw
}

// sides is the lock as the engine sees it: a read side and a write side
// in one hash.
type sides struct {
	hold.Base
	keys script.RWKeys
	cfg  config
}

// acquire runs the acquire script of mode m once for hold a.ID: a new
// hold's, or the handle's current one's (a downgrade), so Redis needs no
// count of the caller's. A hold has one read level in Redis, whatever the
// number of the handle's readers (counted in the process), tagged with
// the attempt's number (a.Seq) so that its release names it exactly. A blocking waiter
// that is refused announces itself: a writer so that new readers wait
// behind it, a reader so that the next write release gives it its turn.
// An announcement it may have made when its outcome is unknown is
// withdrawn by withdraw.
func (s *sides) acquire(ctx context.Context, m hold.Mode, a hold.Asking) (hold.Grant, error) {
	var cmd script.RWHoldsCmd
	if m == hold.Shared {
		cmd = script.RWReadTake(ctx, s.RDB, s.keys, script.RWReadArgs{
			ID: a.ID, Lease: s.cfg.Lease(), Announce: a.Blocking, Patience: WaiterTimeout, Deadline: a.Deadline,
			Tag: a.Seq,
		})
	} else {
		cmd = script.RWWriteTake(ctx, s.RDB, s.keys, script.RWWriteArgs{
			ID: a.ID, Lease: s.cfg.Lease(), Fencing: s.cfg.fencing, Announce: a.Blocking,
			Patience: WaiterTimeout, Deadline: a.Deadline,
		})
	}
	res, err := cmd.Result()
	g := hold.Grant{OK: res.OK, Levels: levels(res), Token: res.Token, Wait: res.Wait}
	if res.Upgrade {
		g.Refused = ErrUpgradeNotSupported
	}
	return g, err
}

// release runs the release script of mode m once for hold id (see
// hold.Config). A hold has one level of each mode at a time, which its id
// names, and for a read level, which a hold may take again, the tag of
// the attempt that took it.
func (s *sides) release(ctx context.Context, m hold.Mode, id string, tag uint64, _ bool) (hold.Released, error) {
	args := script.ReleaseArgs{ID: id, Lease: s.cfg.Lease(), Sharded: s.Sharded, Tag: tag}
	var cmd script.RWHoldsCmd
	if m == hold.Shared {
		cmd = script.RWReadUnlock(ctx, s.RDB, s.keys, args)
	} else {
		cmd = script.RWWriteUnlock(ctx, s.RDB, s.keys, args)
	}
	res, err := cmd.Result()
	return hold.Released{Levels: levels(res), NotHeld: res.NotHeld}, err
}

func (s *sides) renew(ctx context.Context, sc redis.Scripter, id string) func() (bool, error) {
	return hold.Renewal(script.RWRenew(ctx, sc, s.keys, id, s.cfg.Lease()))
}

func (s *sides) forceUnlock(ctx context.Context, receipt string, aim []any) (int64, error) {
	return script.RWForceUnlock(ctx, s.RDB, s.keys, receipt, exactly.ReceiptTTL, s.Sharded, aim).Result()
}

// channel is where waiters of mode m sleep: a write release wakes every
// reader, a read release that frees the lock wakes a writer.
func (s *sides) channel(m hold.Mode) string {
	if m == hold.Shared {
		return s.keys.ReadChannel
	}
	return s.keys.WriterChannel
}

// announcement is where a refused blocking attempt of mode m announces
// the handle: its member in the writers' or the readers' sorted set. The
// client's keeper keeps it while the waiter is parked, once a second, so
// the waiter need not attempt to renew it: it sleeps until a release wakes
// it, the lease of whatever holds it back runs out, or the keeper tells it
// to attempt (its announcement is gone, or the lock is free).
func (s *sides) announcement(m hold.Mode) *perclient.Place {
	set := s.keys.Writers
	if m == hold.Shared {
		set = s.keys.Readers
	}
	return &perclient.Place{Key: set, Member: s.Owner, TTL: WaiterTimeout, Lock: s.keys.Lock}
}

// withdraw removes the handle's announcement as a waiter of mode m, if
// any, after a failed Lock or RLock, waking the waiters it held back. An
// announcement names the handle, which waits for one hold at a time; a
// level the wait may have taken is given back by its id, not here.
func (s *sides) withdraw(ctx context.Context, m hold.Mode, a hold.Asking) (bool, error) {
	_, err := script.RWWithdraw(ctx, s.RDB, s.keys, s.Owner, m == hold.Shared, s.Sharded, a.Deadline).Result()
	return false, err
}

// levels are the handle's hold levels a script reported.
func levels(res script.RWHolds) hold.Levels {
	return hold.Levels{hold.Exclusive: res.Writes, hold.Shared: res.Reads}
}

// Name returns the name of the lock.
func (rw *RWMutex) Name() string { return rw.l.Name() }

// RLock locks rw for reading. It waits while the write lock is held (by
// another process, handle, or goroutine on this handle) or a writer is
// waiting (see the package doc), until ctx is done; a write release lets
// it in ahead of the next writer. With a ctx that carries
// a read hold of rw (see [RWMutex.RDo]) it re-enters it; with a write hold's
// ctx (see [RWMutex.Do]) it takes a read hold at once that outlives the
// write hold (a downgrade). On failure RLock returns an error wrapping
// ctx.Err() or the Redis error, and leaves nothing behind: no hold, no
// subscription.
func (rw *RWMutex) RLock(ctx context.Context) error { return rw.l.Lock(ctx, hold.Shared) }

// TryRLock makes one attempt to lock rw for reading. It reports false and
// no error when the lock is write-locked (by another process, handle, or
// goroutine on this handle) or a writer is waiting, unless it is the
// handle's turn (see the package doc); it does not announce itself.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) { return rw.l.TryLock(ctx, hold.Shared) }

// Lock locks rw for writing. It waits until nobody else (no process, handle,
// or other goroutine on this handle) holds the lock in either mode and the
// readers that waited behind the last write hold have come (see the
// package doc), or until ctx is done. While it waits it announces itself,
// so that new readers wait behind it. With a ctx that carries rw's write hold (see Do) it re-enters
// it; with a ctx that carries a read hold (see [RWMutex.RDo]) it gets an
// error wrapping [ErrUpgradeNotSupported] at once. On failure Lock returns
// an error wrapping ctx.Err() or the Redis error, withdraws its announcement
// (waking the readers it held back) and leaves nothing behind.
func (rw *RWMutex) Lock(ctx context.Context) error { return rw.l.Lock(ctx, hold.Exclusive) }

// TryLock makes one attempt to lock rw for writing. It reports false and no
// error when the lock is held in either mode (by another process, handle, or
// goroutine on this handle) or it is the turn of readers that waited behind
// the last write hold; it does not announce itself. With a ctx that
// carries a read hold (see [RWMutex.RDo]) it returns an error wrapping
// ErrUpgradeNotSupported.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	return rw.l.TryLock(ctx, hold.Exclusive)
}
