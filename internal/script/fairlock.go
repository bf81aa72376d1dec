package script

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	fairAcquire     = load("fairlock_acquire.lua")
	fairUnlock      = load("fairlock_unlock.lua")
	fairRenew       = load("fairlock_renew.lua")
	fairForceUnlock = load("fairlock_forceunlock.lua")
	fairLeave       = load("fairlock_leave.lua")
)

// FairKeys names the keys and channels of one fair lock.
type FairKeys struct {
	Lock     string // the lock hash
	Queue    string // the waiter list
	Timeouts string // the zset of waiter deadlines
	Fence    string // the fencing counter: the name's last token, for a lease
	Waiter   string // the prefix of the waiters' channels: Waiter + owner id
	Places   string // the prefix of the waiters' places: Places + owner id
}

func (k FairKeys) line() []string { return []string{k.Lock, k.Queue, k.Timeouts} }

// FairTakeArgs are the arguments of FairTake.
type FairTakeArgs struct {
	Owner    string
	Lease    time.Duration
	Fencing  bool          // take a fencing token on a first acquisition
	Holds    int64         // the hold count the caller believes it has
	Patience time.Duration // how long a refused attempt keeps its place in line; 0 never joins
	Sharded  bool          // notify with SPUBLISH (Redis Cluster 7+)
	// GrantLease bounds the lease of a grant to the waiter first in line.
	GrantLease time.Duration
	Seq        uint64 // the attempt's mark
	Deadline   int64  // server time in milliseconds
	// Anew says that the handle gave its last hold up (hold.Asking.Anew):
	// with Fencing, a hold of the owner's that an earlier attempt took,
	// found in Redis, takes a new token instead of reporting the one it
	// recorded.
	Anew bool
}

// FairTake runs fairlock_acquire.lua: take the lock for a.Owner if nobody
// waits before it, taking a fencing token on a first acquisition when
// a.Fencing is set. When the lock cannot be taken and a.Patience is
// positive, the owner joins the line (or keeps its place) with the
// deadline a.Patience from now on the server's clock; with 0 it never
// joins. A hold of the owner's found there is a resend of an attempt that
// went through, a grant the caller has not completed, or a hold the
// handle gave up (a.Anew): it is reported as held, with the lease set. A
// free lock with another waiter first in line is granted to that waiter,
// if its place shows it live, for that waiter's own grant lease. When not
// OK, Wait is how long the holder's lease still runs. a.Seq numbers the
// attempt among the owner's, increasing, and is the attempt's mark
// (Acquired.Mark). A copy that runs after a.Deadline (server time in
// milliseconds) takes nothing, joins no line and is answered with
// internal.Late's error.
func FairTake(ctx context.Context, c Processor, k FairKeys, a FairTakeArgs) AcquireCmd {
	keys := append(k.line(), k.Fence, k.Places+a.Owner)
	// No ARGV[12] (office): a fair lock's, "" when absent. Every argument
	// costs Redis a string to make.
	return AcquireCmd{fairAcquire.run(ctx, c, keys, a.Owner, ms(a.Lease), fence(a.Fencing, a.Anew), a.Holds, patienceMs(a.Patience),
		k.Waiter, flag(a.Sharded), ms(a.GrantLease), a.Seq, k.Places, a.Deadline)}
}

// FairUnlock runs fairlock_unlock.lua: release a.Owner's hold (one level
// in Redis: re-entry is counted in the process) and grant the lock to the
// first live waiter in line, for a.GrantLease or the waiter's own grant
// lease if shorter (see FairTake). a.Expect is the hold count the caller
// believes it has, or 0 for any. The reply's Holds is 0, UnlockNotHeld or
// UnlockMismatch, and names the grantee of a grant. a.Mark is the mark of the owner's latest attempt,
// or for a give-back of the attempt it undoes (see ReentrantUnlock). go-redis never
// retries it: after a network error the outcome is unknown, and only the
// caller knows how to retry safely.
func FairUnlock(ctx context.Context, c Processor, k FairKeys, a ReleaseArgs) UnlockCmd {
	// No ARGV[9] (office): a fair lock's, "" when absent.
	return UnlockCmd{fairUnlock.run(ctx, c, append(k.line(), k.Fence), a.ID, ms(a.Lease), a.Expect, k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, 0)}
}

// FairRenew runs fairlock_renew.lua: extend the lease if owner still holds
// the lock. The reply is false when it does not, and names who holds it
// instead, if anyone does.
func FairRenew(ctx context.Context, c redis.Scripter, k FairKeys, owner string, lease time.Duration, sharded bool) RenewCmd {
	return RenewCmd{cmd: fairRenew.queue(ctx, c, k.line(), owner, ms(lease), k.Waiter, flag(sharded))}
}

// FairForceUnlock runs fairlock_forceunlock.lua: delete the lock, if its
// holds are still the ones aim names (see Aim), and wake the waiter first
// in line, once for the call whose receipt key, which lives for ttl, is
// receipt. The reply is one of the Force outcomes; a repeated call reports
// what the first did.
func FairForceUnlock(ctx context.Context, c Processor, k FairKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	args := append([]any{k.Waiter, flag(sharded), ms(ttl), ""}, aim...)
	return IntCmd{fairForceUnlock.run(ctx, c, append(k.line(), receipt), args...)}
}

// FairLeave runs fairlock_leave.lua: take owner out of the line, waking the
// next waiter if owner was first and the lock is free. The reply is
// LeftLine, LeftGranted (owner was not in line and holds one level) or
// LeftNothing; a hold is never released. last is the mark of the wait's
// last attempt: a copy that finds the place of a later wait (a higher
// mark) changes nothing.
func FairLeave(ctx context.Context, c Processor, k FairKeys, owner string, sharded bool, last uint64) IntCmd {
	return IntCmd{fairLeave.run(ctx, c, append(k.line(), k.Places+owner), owner, k.Waiter, flag(sharded), last)}
}
