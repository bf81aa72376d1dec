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
	// Others are the keys other kinds of primitive keep under the name
	// (keyspace.Names.Others): the acquire writes nothing while the lock
	// hash is absent and one of them exists (WRONGTYPE). None: no check.
	Others []string
}

func (k FairKeys) line() []string { return []string{k.Lock, k.Queue, k.Timeouts} }

// FairTakeArgs are the arguments of FairTake.
type FairTakeArgs struct {
	ID       string // the hold id: "<owner id>:<n>", one per wait, never reused
	Lease    time.Duration
	Fencing  bool          // take a fencing token on a first acquisition, and on a grant to the wait
	Patience time.Duration // how long a refused attempt keeps its place in line; 0 never joins
	Sharded  bool          // notify with SPUBLISH (Redis Cluster 7+)
	// GrantLease bounds the lease of a grant to the waiter first in line.
	GrantLease time.Duration
	Deadline   int64  // server time in milliseconds
	Seq        uint64 // the attempt's number, which its place and a grant to it name
}

// FairTake runs fairlock_acquire.lua: take the lock for hold a.ID if
// nobody live waits before its owner, taking a fencing token on a first
// acquisition when a.Fencing is set. When the lock cannot be taken and
// a.Patience is positive, the owner joins the line (or keeps its place,
// now naming a.ID) with the deadline a.Patience from now on the server's
// clock; with 0 it never joins. A hold of a.ID found there is this wait's
// (a resend of an attempt that went through, or a grant the caller has
// not completed): it is reported as held with its token, the lease set. A
// free lock with another live waiter first in line is granted to that
// waiter, for that waiter's own grant lease. When not OK, Wait is how long
// the holder's lease still runs. A copy that runs after a.Deadline (server
// time in milliseconds) takes nothing, joins no line and is answered with
// exactly.Late's error.
func FairTake(ctx context.Context, c Processor, k FairKeys, a FairTakeArgs) AcquireCmd {
	keys := append(append(k.line(), k.Fence, k.Places+OwnerOf(a.ID)), k.Others...)
	// ARGV[10..12] (office, value, values) are a fair lock's "". Every argument
	// costs Redis a string to make.
	return AcquireCmd{fairAcquire.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Fencing), patienceMs(a.Patience),
		k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, a.Deadline, "", "", "", a.Seq)}
}

// FairUnlock runs fairlock_unlock.lua: release hold a.ID and grant the
// lock to the first live waiter in line, for a.GrantLease or the waiter's
// own grant lease if shorter (see FairTake). The reply's Holds is 0 or
// UnlockNotHeld (the id holds nothing: released already, granted on or
// expired; nothing changed), and names the grantee of a grant. An id is
// never reused, so a copy that runs late changes nothing. go-redis never retries
// it: after a network error the outcome is unknown, and only the caller
// knows how to read a retry.
func FairUnlock(ctx context.Context, c Processor, k FairKeys, a ReleaseArgs) UnlockCmd {
	// No ARGV[7] (office): a fair lock's, "" when absent.
	return UnlockCmd{fairUnlock.run(ctx, c, append(k.line(), k.Fence), a.ID, ms(a.Lease), k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places)}
}

// FairRenew runs fairlock_renew.lua: extend the lease if hold id still
// holds the lock. The reply is false when it does not, and names who
// holds it instead, if anyone does.
func FairRenew(ctx context.Context, c redis.Scripter, k FairKeys, id string, lease time.Duration, sharded bool) RenewCmd {
	return RenewCmd{cmd: fairRenew.queue(ctx, c, k.line(), id, ms(lease), k.Waiter, flag(sharded))}
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

// FairLeave runs fairlock_leave.lua: take the owner of hold id out of the
// line, if its place there is still for id, waking the next waiter if the
// owner was first and the lock is free. The reply is LeftLine, LeftGranted
// (not in line, and id holds the lock: a grant) or LeftNothing; a hold is
// never released (the caller gives it back by id). A copy that finds the
// place of a later wait changes nothing.
func FairLeave(ctx context.Context, c Processor, k FairKeys, id string, sharded bool) IntCmd {
	return IntCmd{fairLeave.run(ctx, c, append(k.line(), k.Places+OwnerOf(id)), id, k.Waiter, flag(sharded))}
}
