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
	rlockLeave       = load("rlock_leave.lua")
)

// LockKeys names the keys and channels of one reentrant lock.
type LockKeys struct {
	Lock   string // the lock hash
	Fence  string // the fencing counter: the name's last token, for a lease
	Queue  string // the waiter list
	Places string // the prefix of the waiters' places in line: Places + owner id
	// Patience is the waiter timeout: the longest a place lives.
	Patience time.Duration
	Waiter   string // the prefix of the waiters' channels: Waiter + owner id
	Channel  string // the release channel: "1" when a release leaves the lock free
	// Others are the keys other kinds of primitive keep under the name
	// (keyspace.Names.Others): the acquire does not take a free lock
	// while one of them exists (WRONGTYPE). None: no check.
	Others []string
}

// Acquired is the outcome of an acquire attempt.
type Acquired struct {
	OK    bool          // the hold id holds the lock now
	Holds int64         // the hold's levels in Redis, when OK
	Token uint64        // the hold's fencing token, else 0
	Wait  time.Duration // the holder's remaining lease when not OK; 0 if unknown
}

// AcquireCmd is the reply of an acquire script (ReentrantTake, FairTake).
type AcquireCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c AcquireCmd) Result() (Acquired, error) {
	if n, ok := c.cmd.Val().(int64); ok && n >= 1 && c.cmd.Err() == nil {
		// A first acquisition answers a bare 1, or its fencing token, a
		// larger integer (see lua/rlock_acquire.lua): a table costs Redis
		// more.
		if n == 1 {
			return Acquired{OK: true, Holds: 1}, nil
		}
		return Acquired{OK: true, Holds: 1, Token: uint64(n)}, nil
	}
	v, err := c.cmd.Slice()
	if err != nil {
		return Acquired{}, err
	}
	n := make([]int64, min(len(v), 3))
	for i := range n {
		n[i], _ = v[i].(int64)
	}
	switch {
	case len(n) == 3 && n[0] == 1:
		return Acquired{OK: true, Holds: n[1], Token: uint64(n[2])}, nil
	case len(n) < 2:
		return Acquired{}, errShortReply
	}
	return Acquired{Wait: pttl(n[1])}, nil
}

// TakeArgs are the arguments of ReentrantTake and FairTake.
type TakeArgs struct {
	ID       string // the hold id: "<owner id>:<n>", one per wait, never reused
	Lease    time.Duration
	Fencing  bool          // take a fencing token on a first acquisition
	Patience time.Duration // how long a refused attempt keeps its place in line; 0 never joins
	Deadline int64         // server time in milliseconds
	Seq      uint64        // the attempt's number: a blocking attempt's place names it, and a grant to the place

	// Placed says that the owner may have a place in line (an earlier
	// attempt of its wait was refused, or its outcome is unknown): an
	// acquisition gives it up. Unset, the script does not look for one,
	// which spares the uncontended Lock a command.
	Placed bool
	// Watched says that the handle has watchers on the lock's release
	// channel (hold.Watcher): a refused attempt marks the other hold so
	// that its release is published there. Unset, an uncontended release
	// publishes nothing.
	Watched bool
}

// ReentrantTake runs rlock_acquire.lua: take the lock for hold a.ID with
// a.Lease, taking a fencing token on a first acquisition when a.Fencing
// is set: the larger of the counter + 1 and the server's clock in
// microseconds, which the hold records and which the counter keeps for
// a.Lease. A hold of a.ID found there is a resend of an attempt of the
// same wait that went through, or a grant the caller has not completed:
// it is reported as held, with its token and the lease set. When another
// hold has the lock and a.Patience is positive, the owner joins the line
// (or keeps its place, now naming a.ID), its place living a.Patience from
// now. A copy that runs after a.Deadline (server time in milliseconds)
// takes nothing, joins no line and is answered with exactly.Late's
// error.
func ReentrantTake(ctx context.Context, c Processor, k LockKeys, a TakeArgs) AcquireCmd {
	keys := append([]string{k.Lock, k.Queue, k.Places + OwnerOf(a.ID), k.Fence}, k.Others...)
	knows := ""
	if a.Placed {
		knows += "p"
	}
	if a.Watched {
		knows += "w"
	}
	return AcquireCmd{rlockAcquire.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Fencing), patienceMs(a.Patience), a.Deadline, knows, a.Seq)}
}

// UnlockNotHeld is the outcome of a release script (ReentrantUnlock,
// FairUnlock, ...) whose hold id holds nothing, besides a remaining hold
// count >= 0.
const UnlockNotHeld = -1

// ReentrantUnlock runs rlock_unlock.lua: release hold a.ID and grant
// the lock to the first live waiter in line, for a.GrantLease. The reply's
// Holds is 0 or UnlockNotHeld (the id holds nothing: released already,
// granted on or expired; nothing changed), and names the grantee of a
// grant. An id is never reused, so a copy that runs late changes nothing.
// go-redis never retries it: after a network error the outcome is
// unknown, and only the caller knows how to read a retry.
func ReentrantUnlock(ctx context.Context, c Processor, k LockKeys, a ReleaseArgs) UnlockCmd {
	keys := []string{k.Lock, k.Queue, k.Fence, k.Channel}
	args := []any{a.ID, ms(a.Lease), flag(a.Sharded), k.Waiter, ms(a.GrantLease), k.Places, ms(k.Patience)}
	return UnlockCmd{rlockUnlock.run(ctx, c, keys, args...)}
}

// ReleaseArgs are the arguments of a release script (ReentrantUnlock,
// FairUnlock, RWReadUnlock, RWWriteUnlock).
type ReleaseArgs struct {
	ID      string        // the hold id
	Lease   time.Duration // the lease the script may set (the fencing counter's, a hold left)
	Sharded bool          // notify with SPUBLISH (Redis Cluster 7+)
	// GrantLease bounds the lease of a grant to the waiter first in line
	// (a mutex's release).
	GrantLease time.Duration
	// Tag names the read level RWReadUnlock releases (see RWReadArgs.Tag).
	Tag uint64
}

// ReentrantRenew runs rlock_renew.lua: extend the lease if hold id still
// holds the lock. The reply is false when it does not (nothing changed),
// and names who holds it instead, if anyone does.
func ReentrantRenew(ctx context.Context, c redis.Scripter, lock, id string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rlockRenew.queue(ctx, c, []string{lock}, id, ms(lease))}
}

// ReentrantForceUnlock runs rlock_forceunlock.lua: delete the lock, if
// its holds are still the ones aim names (see Aim), and wake the waiter
// first in line, once for the call whose receipt key, which lives for ttl,
// is receipt. The reply is one of the Force outcomes; a repeated call
// reports what the first did.
func ReentrantForceUnlock(ctx context.Context, c Processor, k LockKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	args := append([]any{flag(sharded), ms(ttl), k.Waiter}, aim...)
	return IntCmd{rlockForceUnlock.run(ctx, c, []string{k.Lock, k.Queue, receipt, k.Channel}, args...)}
}

// ReentrantLeave runs rlock_leave.lua: take the owner of hold id out of
// the line, if its place there is still for id. The reply is LeftLine,
// LeftGranted (not in line, and id holds the lock: a grant) or
// LeftNothing; a hold is never released (the caller gives it back by
// id). A copy that finds the place of a later wait changes nothing.
func ReentrantLeave(ctx context.Context, c Processor, k LockKeys, id string) IntCmd {
	return IntCmd{rlockLeave.run(ctx, c, []string{k.Lock, k.Queue, k.Places + OwnerOf(id)}, id)}
}
