package script

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	rlockAcquire     = load("rlock_acquire.lua")
	rlockUnlock      = load("rlock_unlock.lua")
	rlockRenew       = load("rlock_renew.lua")
	rlockForceUnlock = load("rlock_forceunlock.lua")
)

// LockKeys names the keys and channel of one reentrant lock.
type LockKeys struct {
	Lock    string // the lock hash
	Fence   string // the fencing counter
	Channel string // the unlock channel
}

// Acquired is the outcome of an acquire attempt.
type Acquired struct {
	OK    bool          // the owner holds the lock now
	Holds int64         // the owner's hold count, when OK
	Token uint64        // the fencing token of a first acquisition, else 0
	Wait  time.Duration // the holder's remaining lease when not OK; 0 if unknown
}

// AcquireCmd is the reply of ReentrantAcquire.
type AcquireCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c AcquireCmd) Result() (Acquired, error) {
	v, err := ints(c.cmd)
	if err != nil {
		return Acquired{}, err
	}
	if v[0] == 1 && len(v) == 3 {
		return Acquired{OK: true, Holds: v[1], Token: uint64(v[2])}, nil
	}
	if len(v) < 2 {
		return Acquired{}, errShortReply
	}
	return Acquired{Wait: pttl(v[1])}, nil
}

// ReentrantAcquire runs rlock_acquire.lua: take or re-enter the lock for owner
// with the given lease, taking a fencing token on a first acquisition when
// fencing is set. holds is the hold count the caller believes it has: a
// retry of an attempt that already went through changes nothing.
func ReentrantAcquire(ctx context.Context, c Processor, k LockKeys, owner string, lease time.Duration, fencing bool, holds int64) AcquireCmd {
	return AcquireCmd{rlockAcquire.run(ctx, c, []string{k.Lock, k.Fence}, owner, ms(lease), flag(fencing), holds, flag(false))}
}

// ReentrantAcquireAgain is ReentrantAcquire for a waiter that holds nothing and
// whose previous attempt in the same wait was refused without error: when
// the lock is held, it is refused after one PTTL, without checking again
// whether owner holds it or whether the name is used by another kind of
// lock (the refused attempt checked both, and only an attempt of owner's
// can have changed the first). A key without expiry, which no lock is,
// still gets the full check.
func ReentrantAcquireAgain(ctx context.Context, c Processor, k LockKeys, owner string, lease time.Duration, fencing bool) AcquireCmd {
	return AcquireCmd{rlockAcquire.run(ctx, c, []string{k.Lock, k.Fence}, owner, ms(lease), flag(fencing), 0, flag(true))}
}

// Unlock outcomes of ReentrantUnlock besides a remaining hold count >= 0.
const (
	UnlockNotHeld  = -1 // the owner does not hold the lock
	UnlockMismatch = -2 // the hold count was not the expected one
)

// ReentrantUnlock runs rlock_unlock.lua: release one level for owner, re-arming
// lease while holds remain, and notify one waiter per process when the lock
// becomes free. expect is the hold count the caller believes it has, or 0
// for any. The reply is the remaining hold count, UnlockNotHeld or
// UnlockMismatch. go-redis never retries it: after a network error the
// outcome is unknown, and only the caller knows how to retry safely.
func ReentrantUnlock(ctx context.Context, c Processor, k LockKeys, owner string, lease time.Duration, sharded bool, expect int64) IntCmd {
	return IntCmd{rlockUnlock.run(ctx, c, []string{k.Lock, k.Channel}, owner, ms(lease), flag(sharded), expect)}
}

// ReentrantRenew runs rlock_renew.lua: extend the lease if owner still holds the
// lock. The reply is false when it does not (nothing changed).
func ReentrantRenew(ctx context.Context, c redis.Scripter, lock, owner string, lease time.Duration) BoolCmd {
	return BoolCmd{rlockRenew.queue(ctx, c, []string{lock}, owner, ms(lease))}
}

// ReentrantForceUnlock runs rlock_forceunlock.lua: delete the lock whoever
// holds it and wake a waiter, once for the call whose receipt key, which
// lives for ttl, is receipt. The reply is false when there was no lock; a
// repeated call reports what the first did.
func ReentrantForceUnlock(ctx context.Context, c Processor, k LockKeys, receipt string, ttl time.Duration, sharded bool) BoolCmd {
	return BoolCmd{rlockForceUnlock.run(ctx, c, []string{k.Lock, k.Channel, receipt}, flag(sharded), ms(ttl))}
}
