package script

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	rwReadLock        = load("rwlock_readlock.lua")
	rwWriteLock       = load("rwlock_writelock.lua")
	rwReadUnlock      = load("rwlock_readunlock.lua")
	rwWriteUnlock     = load("rwlock_writeunlock.lua")
	rwlockRenew       = load("rwlock_renew.lua")
	rwlockForceUnlock = load("rwlock_forceunlock.lua")
	rwlockWithdraw    = load("rwlock_withdraw.lua")
)

// RWKeys names the keys and channels of one read-write lock, as seen by one
// owner.
type RWKeys struct {
	Lock          string // the lock hash: mode and one field per holder and mode
	Writers       string // the zset of announced waiting writers
	Readers       string // the zset of announced waiting readers
	Turn          string // the zset of the readers whose turn it is
	ReaderPrefix  string // the prefix of every reader's timeout key
	Reader        string // this owner's read timeout key: ReaderPrefix + owner
	ReadChannel   string // wakes waiting readers
	WriterChannel string // wakes waiting writers
	Fence         string // the fencing counter of write holds
}

// RWHolds is the outcome of a read-write lock acquire attempt or release.
type RWHolds struct {
	OK       bool          // acquired, or released
	NotHeld  bool          // release: the owner did not hold the lock in that mode
	Mismatch bool          // release: the hold count differed from the expected one; nothing changed
	Upgrade  bool          // write acquire: refused, the owner holds a read lock
	Reads    int64         // the owner's read holds afterwards, when OK
	Writes   int64         // the owner's write holds afterwards, when OK
	Token    uint64        // write acquire, when OK: the fencing token of a first write acquisition, else 0
	Wait     time.Duration // acquire refused: how long the blocker's lease runs; 0 if unknown
}

// RWHoldsCmd is the reply of the read-write lock's acquire and release
// scripts.
type RWHoldsCmd struct {
	cmd     *redis.Cmd
	release bool
}

// Result decodes the reply.
func (c RWHoldsCmd) Result() (RWHolds, error) {
	v, err := ints(c.cmd)
	if err != nil {
		return RWHolds{}, err
	}
	switch {
	case v[0] == 1 && len(v) == 4 && !c.release:
		return RWHolds{OK: true, Reads: v[1], Writes: v[2], Token: uint64(v[3])}, nil
	case v[0] == 1 && len(v) == 3:
		return RWHolds{OK: true, Reads: v[1], Writes: v[2]}, nil
	case c.release && v[0] == UnlockNotHeld:
		return RWHolds{NotHeld: true}, nil
	case c.release && v[0] == UnlockMismatch:
		return RWHolds{Mismatch: true}, nil
	case !c.release && v[0] == 0 && len(v) == 2:
		return RWHolds{Wait: pttl(v[1])}, nil
	case !c.release && v[0] == -1:
		return RWHolds{Upgrade: true}, nil
	}
	return RWHolds{}, errShortReply
}

// RWReadArgs are the arguments of RWReadTake.
type RWReadArgs struct {
	Owner string
	Lease time.Duration // the read lease, re-armed by a re-entry
	Reads int64         // the read holds the caller believes it has
	// Announce says that a refused attempt announces the owner as a
	// waiting reader, for Patience, so that the next write release gives
	// it its turn.
	Announce bool
	Patience time.Duration
	Mark     uint64 // the attempt's mark
	Deadline int64  // server time in milliseconds
	// Writes is the write holds the caller believes it has, or -1 for
	// not said: a write level of the owner's then counts as
	// the caller's. With 0, a write level of the owner's found in Redis
	// is one of a hold its handle gave up (lost, or its release failed):
	// the attempt is refused as if another owner held it, rather than
	// reporting it to the caller as a level of its own that nobody would
	// unlock.
	Writes int64
}

// RWReadTake runs rwlock_readlock.lua: take or re-enter a read hold of
// a.Owner (see the script's header for the writer preference and the
// turn of readers), announcing a refused blocking attempt as a waiting
// reader for a.Patience. a.Mark numbers the attempt; a copy that runs
// after a.Deadline (server time in milliseconds) changes nothing and is
// answered with internal.Late's error.
func RWReadTake(ctx context.Context, c Processor, k RWKeys, a RWReadArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.Writers, k.Reader, k.Readers, k.Turn}
	args := []any{a.Owner, ms(a.Lease), a.Reads, a.Mark, flag(a.Announce), ms(a.Patience), a.Deadline}
	if a.Writes >= 0 {
		args = append(args, a.Writes)
	}
	return RWHoldsCmd{cmd: rwReadLock.run(ctx, c, keys, args...)}
}

// RWWriteArgs are the arguments of RWWriteTake.
type RWWriteArgs struct {
	Owner   string
	Lease   time.Duration
	Fencing bool  // take a fencing token on a first write acquisition
	Writes  int64 // the write hold count the caller believes it has
	// Announce says that a refused attempt announces the owner as a
	// waiting writer, for Patience.
	Announce bool
	Patience time.Duration
	Mark     uint64 // the attempt's mark
	Deadline int64  // server time in milliseconds
	// Anew says that the handle gave its last hold up (hold.Asking.Anew):
	// with Fencing, a write hold of the owner's that an earlier attempt
	// took, found in Redis, takes a new token instead of reporting the
	// one it recorded.
	Anew bool
	// Reads is the read holds the caller believes it has, or -1 for not
	// said: a read level of the owner's then counts as the
	// caller's. With 0, a read level of the owner's found in Redis is
	// one of a hold its handle gave up (lost, or its release failed). A
	// write hold it adopts drops that level rather than report it, a
	// level no caller would release; a read hold of other owners' with it
	// is waited for as another reader's, not refused as an upgrade.
	Reads int64
}

// RWWriteTake runs rwlock_writelock.lua: take the write lock for a.Owner,
// taking a fencing token on a first write acquisition when a.Fencing is
// set (see ReentrantTake). When refused and a.Announce is set, the owner
// is announced as a waiting writer for a.Patience. A read holder is
// refused with Upgrade. A copy that runs after a.Deadline changes
// nothing (see RWReadTake).
func RWWriteTake(ctx context.Context, c Processor, k RWKeys, a RWWriteArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.Writers, k.Reader, k.Turn, k.Fence}
	args := []any{a.Owner, ms(a.Lease), a.Writes, flag(a.Announce), ms(a.Patience), a.Mark, fence(a.Fencing, a.Anew), a.Deadline}
	if a.Reads >= 0 {
		args = append(args, a.Reads)
	}
	return RWHoldsCmd{cmd: rwWriteLock.run(ctx, c, keys, args...)}
}

// RWReadUnlock runs rwlock_readunlock.lua: release one read level of owner,
// re-arming lease while read holds remain; when the lock becomes free, one
// waiting writer per process is woken. expect is the read hold count the
// caller believes it has, or 0 for any; mark is the mark of the owner's
// latest attempt, or for a give-back of the attempt it undoes (see
// ReentrantUnlock): a late copy never releases a later read level.
// go-redis never retries it: after a network error the outcome is
// unknown, and only the caller knows how to retry safely.
func RWReadUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.Reader, k.ReaderPrefix, k.WriterChannel}
	return RWHoldsCmd{cmd: rwReadUnlock.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Sharded), a.Expect, 1), release: true}
}

// RWWriteUnlock runs rwlock_writeunlock.lua: release one write level of owner,
// re-arming lease while write holds remain. The last level wakes every
// waiting reader and one waiting writer per process; an owner with read
// holds stays a reader. expect is the write hold count the caller believes
// it has, or 0 for any; mark as for RWReadUnlock. Like RWReadUnlock,
// go-redis never retries it.
func RWWriteUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.Reader, k.Writers, k.ReadChannel, k.WriterChannel, k.Readers, k.Turn}
	return RWHoldsCmd{cmd: rwWriteUnlock.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Sharded), a.Expect, 1), release: true}
}

// RWRenew runs rwlock_renew.lua: extend the leases of whatever owner
// holds. The reply is false when it holds nothing (nothing changed), and
// names another holder, the writer first, if anyone holds the lock.
func RWRenew(ctx context.Context, c redis.Scripter, k RWKeys, owner string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rwlockRenew.queue(ctx, c, []string{k.Lock, k.Reader}, owner, ms(lease)), rw: true}
}

// RWForceUnlock runs rwlock_forceunlock.lua: delete the lock, if its
// holds are still the ones aim names (see Aim), its readers' timeout keys
// and the waiters' announcements, and wake the waiters, once for the call
// whose receipt key, which lives for ttl, is receipt. The reply is one of
// the Force outcomes; a repeated call reports what the first did.
func RWForceUnlock(ctx context.Context, c Processor, k RWKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	keys := []string{k.Lock, k.ReaderPrefix, k.Writers, k.ReadChannel, k.WriterChannel, receipt, k.Readers, k.Turn}
	return IntCmd{rwlockForceUnlock.run(ctx, c, keys, append([]any{flag(sharded), ms(ttl)}, aim...)...)}
}

// RWWithdraw runs rwlock_withdraw.lua: remove owner's announcement as a
// waiting writer (or, if reader is set, as a waiting reader), waking the
// readers when no writer's announcement is left (the writers when the
// readers' turn ends). The reply is false when owner was not announced.
// A copy that runs after deadline (server time in milliseconds) changes
// nothing: it may find a later wait's announcement.
func RWWithdraw(ctx context.Context, c Processor, k RWKeys, owner string, reader, sharded bool, deadline int64) BoolCmd {
	keys := []string{k.Writers, k.ReadChannel, k.Readers, k.Turn, k.WriterChannel}
	side := "w"
	if reader {
		side = "r"
	}
	return BoolCmd{rwlockWithdraw.run(ctx, c, keys, owner, flag(sharded), side, deadline)}
}

// RWFieldNames are the lock hash's fields of one owner's holds.
type RWFieldNames struct{ Read, Write string }

// RWFields returns owner's fields in a read-write lock's hash, as the
// rwlock scripts name them ('r:' .. owner, 'w:' .. owner).
func RWFields(owner string) RWFieldNames {
	return RWFieldNames{Read: "r:" + owner, Write: "w:" + owner}
}
