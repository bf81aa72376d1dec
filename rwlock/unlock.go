package rwlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
)

// RUnlock releases one read level of the handle's hold. When the last
// reader leaves, the lock is free and a waiting writer is woken (it takes
// the lock unless readers whose turn it is have yet to come); while
// other readers remain, the lock lives as long as the longest of their
// leases. RUnlock by a handle that holds no read lock (never locked,
// already released, only write-locked, or its lease ran out) returns an
// error wrapping [ErrNotHeld] and changes nothing.
//
// When the reply of a release is lost, RUnlock and Unlock retry it,
// knowing that the first may have gone through: the retry releases
// nothing more and reports success. If the release of the handle's last
// level fails nonetheless, the handle stops renewing its leases and Done
// closes: Redis frees the lock when the lease runs out, if not before. A
// later RUnlock or Unlock still releases it if it can.
//
// RUnlock, like Unlock, runs even when ctx is done or its deadline has
// passed: it uses ctx's values without its cancellation, bounded by a
// timeout of its own (5s), so a deferred RUnlock after a cancelled request
// still frees the lock at once.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	return rw.l.Unlock(ctx, hold.Shared)
}

// Unlock releases one write level of the handle's hold. On the last level
// every waiting reader is woken and given its turn ahead of the next
// writer, and a writer is woken too; a handle that also holds read locks
// keeps them and stays a reader (a downgrade). Unlock by a handle that does
// not hold the write lock returns an error wrapping ErrNotHeld and changes
// nothing. A lost reply or a failure is handled as for RUnlock.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	return rw.l.Unlock(ctx, hold.Exclusive)
}

// ForceUnlock deletes the lock whoever holds it, in either mode, with
// every reader's lease, every waiter's announcement and the readers' turn,
// and wakes the waiters. It reports whether there was a lock to delete.
// Holders on other handles learn of it at their next renewal: their Done
// closes.
//
// It deletes the holds it read and no others: a copy of it
// that Redis runs late (sent before a network stall, run after it) finds
// the lock released and taken again, and deletes nothing.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) { return rw.l.ForceUnlock(ctx) }

// IsHeld reports whether this handle holds the lock, in either mode, as
// Redis says: whether Redis has the handle's current hold (false when it
// holds nothing; a hold it gave up, still standing, is not its own).
func (rw *RWMutex) IsHeld(ctx context.Context) (bool, error) {
	id := rw.l.HoldID()
	if id == "" {
		return false, nil
	}
	read, write := script.RWFields(id)
	held, err := rw.s.RDB.HMGet(ctx, rw.s.keys.Lock, read, write).Result()
	if err != nil {
		return false, rw.l.Wrap("is held", err)
	}
	return held[0] != nil || held[1] != nil, nil
}

// HoldCount returns the depth of the hold ctx carries (see [RWMutex.Do]
// and [RWMutex.RDo]), in its mode: how many levels were taken through
// it. Without one it returns 1 when the handle has a plain write hold
// (taken by Lock with a ctx that carries none), else 0. It does no I/O.
func (rw *RWMutex) HoldCount(ctx context.Context) (int, error) { return rw.l.HoldCount(ctx) }

// IsLocked reports whether any handle holds the lock, in either mode.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) { return rw.l.IsLocked(ctx) }

// TTL returns the remaining lease of the lock: the write holder's, or the
// longest of the readers'. It is 0 when the lock is not held.
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) { return rw.l.TTL(ctx) }

// Done returns a channel that is closed when the handle's current hold
// ends: when it no longer holds the lock in either mode after RUnlock or
// Unlock, after a ForceUnlock, when its lease runs out, or on a loss
// noticed by the watchdog. A downgrade does not end the hold. When the
// handle holds nothing it returns a closed channel.
func (rw *RWMutex) Done() <-chan struct{} { return rw.l.Done() }

// Token returns the fencing token of the handle's current write hold (see
// [WithFencing]): 0 without fencing, or when the handle holds no write
// lock (read holds, a downgraded writer's included, have none).
func (rw *RWMutex) Token() uint64 { return rw.l.Token() }

// Do write-locks rw (or re-enters the write hold ctx carries), runs fn
// with a ctx that carries the hold and is cancelled if it is lost, and
// unlocks. With fn's ctx, Lock re-enters the hold and RLock downgrades
// (its read hold outlives Do, released by a plain RUnlock). It returns the
// error of Lock, else that of fn, else that of Unlock.
func (rw *RWMutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return rw.l.Do(ctx, hold.Exclusive, fn)
}

// RDo is Do for a read hold: RLock, fn with a ctx that carries the read
// hold (RLock with it re-enters; Lock with it is ErrUpgradeNotSupported),
// RUnlock. With a ctx that carries a write hold, RDo's read hold is a
// downgrade (see RLock) and fn gets that ctx, which still carries the
// write hold.
func (rw *RWMutex) RDo(ctx context.Context, fn func(ctx context.Context) error) error {
	return rw.l.Do(ctx, hold.Shared, fn)
}
