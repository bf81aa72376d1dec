package rwlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/lua"
)

// RUnlock releases one read level of the handle's hold. When the last
// reader leaves, the lock is free and a waiting writer is woken; while
// other readers remain, the lock lives as long as the longest of their
// leases. RUnlock by a handle that holds no read lock (never locked,
// already released, only write-locked, or its lease ran out) returns an
// error wrapping ErrNotHeld and changes nothing.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	return rw.wrap("runlock", rw.release(ctx, read))
}

// Unlock releases one write level of the handle's hold. On the last level
// every waiting reader is woken, and so is a writer; a handle that also
// holds read locks keeps them and stays a reader (a downgrade). Unlock by a
// handle that does not hold the write lock returns an error wrapping
// ErrNotHeld and changes nothing.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	return rw.wrap("unlock", rw.release(ctx, write))
}

func (rw *RWMutex) release(ctx context.Context, m mode) error {
	if err := rw.op.Acquire(ctx, 1); err != nil {
		return err
	}
	defer rw.op.Release(1)
	rw.mu.Lock()
	h := rw.hold
	var reads, writes int64
	if h != nil {
		reads, writes = h.reads, h.writes
	}
	rw.mu.Unlock()
	expect := reads
	if m == write {
		expect = writes
	}
	res, err := rw.unlockCmd(ctx, m, expect).Result()
	if err != nil {
		return err
	}
	switch {
	case res.Mismatch:
		// A retry of a release that went through before its reply was
		// lost: that release is this one.
		if m == read {
			reads--
		} else {
			writes--
		}
	case res.NotHeld:
		if h != nil && expect > 0 {
			// Held here, gone in Redis: the hold was lost. Both modes go
			// together, since every acquisition re-arms both leases.
			rw.end(h, ErrLost)
		}
		return ErrNotHeld
	default:
		reads, writes = res.Reads, res.Writes
	}
	if h != nil {
		rw.settle(h, reads, writes)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, in either mode, with
// every reader's lease and every writer's announcement, and wakes the
// waiters. It reports whether there was a lock to delete. Holders on other
// handles learn of it at their next renewal: their Done closes.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	ok, err := lua.RWLockForceUnlock(ctx, rw.rdb, rw.keys, rw.sharded).Result()
	if err != nil {
		return false, rw.wrap("force unlock", err)
	}
	rw.mu.Lock()
	h := rw.hold
	rw.mu.Unlock()
	if h != nil {
		// Whoever deleted it, this handle's hold is over.
		rw.end(h, nil)
	}
	return ok, nil
}

// IsLocked reports whether any handle holds the lock, in either mode.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) {
	n, err := rw.rdb.Exists(ctx, rw.keys.Lock).Result()
	return n == 1, rw.wrap("is locked", err)
}

// TTL returns the remaining lease of the lock: the write holder's, or the
// longest of the readers'. It is 0 when the lock is not held.
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) {
	d, err := rw.rdb.PTTL(ctx, rw.keys.Lock).Result()
	if err != nil {
		return 0, rw.wrap("ttl", err)
	}
	return max(d, 0), nil
}
