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
}

// Acquired is the outcome of an acquire attempt.
type Acquired struct {
	OK    bool          // the owner holds the lock now
	Holds int64         // the owner's hold count, when OK
	Token uint64        // the fencing token of a first acquisition, else 0
	Wait  time.Duration // the holder's remaining lease when not OK; 0 if unknown
	// Mark, when a blocking attempt was refused, names the attempt in the
	// line, where a grant's message and reply name it (Unlocked.Mark): the
	// attempt's sequence number, which the waiter's place in line holds;
	// 0 when none was set.
	Mark float64
}

// AcquireCmd is the reply of an acquire script (ReentrantTake, FairTake).
type AcquireCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c AcquireCmd) Result() (Acquired, error) {
	if n, ok := c.cmd.Val().(int64); ok && n == 1 && c.cmd.Err() == nil {
		// A first acquisition without a token answers a bare 1 (see
		// lua/rlock_acquire.lua): a table costs Redis more.
		return Acquired{OK: true, Holds: 1}, nil
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
	a := Acquired{Wait: pttl(n[1])}
	if len(v) >= 3 {
		mark, _ := v[2].(string)
		a.Mark = ParseMark(mark)
	}
	return a, nil
}

// TakeArgs are the arguments of ReentrantTake.
type TakeArgs struct {
	Owner    string
	Lease    time.Duration
	Fencing  bool  // take a fencing token on a first acquisition
	Holds    int64 // the hold count the caller believes it has
	Patience time.Duration
	Seq      uint64 // the attempt's mark
	Deadline int64  // server time in milliseconds
	// Placed says that owner may have a place in line (an earlier attempt
	// of its wait was refused, or its outcome is unknown): a blocking
	// first acquisition gives it up. Unset, the script does not look for
	// one, which spares the uncontended Lock a command.
	Placed bool
	// Watched says that the handle has watchers on the lock's release
	// channel (hold.Watcher): a refused attempt marks the other owner's
	// hold so that its release is published there. Unset, an uncontended
	// release publishes nothing.
	Watched bool
	// Anew says that the handle gave its last hold up as lost
	// (hold.Asking.Anew): with Fencing, a hold of the owner's that an
	// earlier attempt took, found in Redis, takes a new token.
	Anew bool
}

// ReentrantTake runs rlock_acquire.lua: take the lock for a.Owner with
// a.Lease, taking a fencing token on a first acquisition when a.Fencing
// is set: the larger of the counter + 1 and the server's clock in
// microseconds, which the hold records (a repeated first acquisition
// reports it) and which the counter keeps for a.Lease. A hold of the
// owner's found there is a resend of an attempt that went through, a
// grant the caller has not completed, or a hold the handle gave up: it is
// reported as held, with the lease set. When another owner holds the lock
// and a.Patience is positive, the owner joins the line (or keeps its
// place), its place living a.Patience from now. a.Seq numbers the attempt
// among the owner's, increasing, and is the attempt's mark
// (Acquired.Mark): a give-back names it. A copy that runs after
// a.Deadline (server time in milliseconds) takes nothing, joins no line
// and is answered with internal.Late's error.
func ReentrantTake(ctx context.Context, c Processor, k LockKeys, a TakeArgs) AcquireCmd {
	keys := []string{k.Lock, k.Queue, k.Places + a.Owner, k.Fence}
	knows := ""
	if a.Placed {
		knows += "p"
	}
	if a.Watched {
		knows += "w"
	}
	return AcquireCmd{rlockAcquire.run(ctx, c, keys, a.Owner, ms(a.Lease), fence(a.Fencing, a.Anew), a.Holds, patienceMs(a.Patience), a.Seq, a.Deadline, knows)}
}

// Unlock outcomes of ReentrantUnlock besides a remaining hold count >= 0.
const (
	UnlockNotHeld  = -1 // the owner does not hold the lock
	UnlockMismatch = -2 // the hold count was not the expected one
)

// ReentrantUnlock runs rlock_unlock.lua: release a.Owner's hold (one
// level in Redis: re-entry is counted in the process) and grant the lock
// to the first live waiter in line, for a.GrantLease. a.Expect is the
// hold count the caller believes it has, or 0 for any. The reply's Holds
// is 0, UnlockNotHeld or UnlockMismatch, and names the grantee of a
// grant. a.Mark is, for a release, the mark of the owner's
// latest attempt when it was sent, for a give-back the mark of the
// attempt it undoes (0: none): it changes nothing (UnlockMismatch) once
// the hold records a later attempt's mark, one that took or reported the
// hold after the copy was sent, so that a copy run late never releases
// the owner's next hold. go-redis never retries it: after a network error
// the outcome is unknown, and only the caller knows how to retry safely.
func ReentrantUnlock(ctx context.Context, c Processor, k LockKeys, a ReleaseArgs) UnlockCmd {
	keys := []string{k.Lock, k.Queue, k.Fence, k.Channel}
	args := []any{a.Owner, ms(a.Lease), flag(a.Sharded), a.Expect, k.Waiter, ms(a.GrantLease), k.Places, ms(k.Patience), a.Mark}
	return UnlockCmd{rlockUnlock.run(ctx, c, keys, args...)}
}

// ReleaseArgs are the arguments of a release script (ReentrantUnlock,
// FairUnlock, RWReadUnlock, RWWriteUnlock).
type ReleaseArgs struct {
	Owner   string
	Lease   time.Duration // the lease the script may set (the fencing counter's, a hold left)
	Sharded bool          // notify with SPUBLISH (Redis Cluster 7+)
	// Expect is the level the caller believes it has, or 0 for any: a
	// mismatch changes nothing.
	Expect int64
	// GrantLease bounds the lease of a grant to the waiter first in line
	// (a mutex's release).
	GrantLease time.Duration
	// Mark is, for a release, the mark of the owner's latest attempt when
	// it was sent; for a give-back, the mark of the attempt it undoes (0:
	// none). A copy changes nothing once the hold records a later mark.
	Mark uint64
}

// ReentrantRenew runs rlock_renew.lua: extend the lease if owner still holds the
// lock. The reply is false when it does not (nothing changed), and names
// who holds it instead, if anyone does.
func ReentrantRenew(ctx context.Context, c redis.Scripter, lock, owner string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rlockRenew.queue(ctx, c, []string{lock}, owner, ms(lease))}
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

// ReentrantLeave runs rlock_leave.lua: take owner out of the line. The
// reply is LeftLine, LeftGranted (owner was not in line and holds one
// level) or LeftNothing; a hold is never released. last is the mark of
// the wait's last attempt: a copy that finds the place of a later wait
// (a higher mark) changes nothing.
func ReentrantLeave(ctx context.Context, c Processor, k LockKeys, owner string, last uint64) IntCmd {
	return IntCmd{rlockLeave.run(ctx, c, []string{k.Lock, k.Queue, k.Places + owner}, owner, last)}
}
