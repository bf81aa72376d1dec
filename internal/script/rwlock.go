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

// RWKeys names the keys and channels of one read-write lock. A hold's
// read timeout key is ReaderPrefix + its hold id (see ReaderKey).
type RWKeys struct {
	Lock          string // the lock hash: mode and one field per hold and mode
	Writers       string // the zset of announced waiting writers
	Readers       string // the zset of announced waiting readers
	Turn          string // the zset of the readers whose turn it is
	ReaderPrefix  string // the prefix of every reader's timeout key
	ReadChannel   string // wakes waiting readers
	WriterChannel string // wakes waiting writers
	Fence         string // the fencing counter of write holds
	// Others are the keys other kinds of primitive keep under the name
	// (keyspace.Names.Others): an acquire writes nothing while the lock
	// hash is absent and one of them exists (WRONGTYPE). None: no check.
	Others []string
}

// ReaderKey is the read timeout key of hold id: its read lease. It is
// the hold's, not the handle's, so that the read levels of a hold the
// handle gave up lapse with their own lease, whatever its next hold
// renews.
func (k RWKeys) ReaderKey(id string) string { return k.ReaderPrefix + id }

// RWHolds is the outcome of a read-write lock acquire attempt or release.
type RWHolds struct {
	OK      bool          // acquired, or released
	NotHeld bool          // release: the hold had no level of that mode; nothing changed
	Upgrade bool          // write acquire: refused, the hold has read levels
	Reads   int64         // the hold's read level afterwards (0 or 1), when OK
	Writes  int64         // the hold's write level afterwards (0 or 1), when OK
	Token   uint64        // write acquire, when OK: the write level's fencing token, else 0
	Wait    time.Duration // acquire refused: how long the blocker's lease runs; 0 if unknown
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
	case !c.release && v[0] == 0 && len(v) == 2:
		return RWHolds{Wait: pttl(v[1])}, nil
	case !c.release && v[0] == -1:
		return RWHolds{Upgrade: true}, nil
	}
	return RWHolds{}, errShortReply
}

// RWReadArgs are the arguments of RWReadTake.
type RWReadArgs struct {
	ID    string        // the hold id: "<owner id>:<n>", one per hold of the handle, never reused
	Lease time.Duration // the read lease, re-armed by every level
	// Announce says that a refused attempt announces the owner as a
	// waiting reader, for Patience, so that the next write release gives
	// it its turn.
	Announce bool
	Patience time.Duration
	Deadline int64 // server time in milliseconds
	// Tag names the read level the attempt takes, to its release (see
	// RWReadUnlock): the attempt's number, higher than any earlier
	// attempt's of the handle (hold.Asking.Seq).
	Tag uint64
}

// RWReadTake runs rwlock_readlock.lua: add a read level to hold a.ID (see
// the script's header for the writer preference and the turn of
// readers), announcing a refused blocking attempt as a waiting reader for
// a.Patience. The level is recorded under a.Tag. A read level of a.ID
// found in Redis is the hold's: it stays one level (the handle counts its
// readers), and takes a.Tag unless a later attempt's tag has it (then
// this is a copy run late, refused). A level under the hold's own write
// level is a downgrade, let in at once. A copy that runs after a.Deadline (server
// time in milliseconds) changes nothing and is answered with
// exactly.Late's error.
func RWReadTake(ctx context.Context, c Processor, k RWKeys, a RWReadArgs) RWHoldsCmd {
	keys := append([]string{k.Lock, k.Writers, k.ReaderKey(a.ID), k.Readers, k.Turn}, k.Others...)
	args := []any{a.ID, ms(a.Lease), flag(a.Announce), ms(a.Patience), a.Deadline, a.Tag}
	return RWHoldsCmd{cmd: rwReadLock.run(ctx, c, keys, args...)}
}

// RWWriteArgs are the arguments of RWWriteTake.
type RWWriteArgs struct {
	ID      string // the hold id, as for RWReadArgs
	Lease   time.Duration
	Fencing bool // take a fencing token when the write lock is taken
	// Announce says that a refused attempt announces the owner as a
	// waiting writer, for Patience.
	Announce bool
	Patience time.Duration
	Deadline int64 // server time in milliseconds
}

// RWWriteTake runs rwlock_writelock.lua: take the write lock for hold
// a.ID, taking a fencing token when a.Fencing is set (see ReentrantTake).
// A write level of a.ID found in Redis was taken by this very attempt (a
// hold takes it once at most): it is reported with its token, and the
// leases set. When refused and a.Announce is set, the owner is announced
// as a waiting writer for a.Patience. A hold with read levels is refused
// with Upgrade. A copy that runs after a.Deadline changes nothing (see
// RWReadTake).
func RWWriteTake(ctx context.Context, c Processor, k RWKeys, a RWWriteArgs) RWHoldsCmd {
	keys := append([]string{k.Lock, k.Writers, k.ReaderKey(a.ID), k.Turn, k.Fence}, k.Others...)
	args := []any{a.ID, ms(a.Lease), flag(a.Announce), ms(a.Patience), flag(a.Fencing), a.Deadline}
	return RWHoldsCmd{cmd: rwWriteLock.run(ctx, c, keys, args...)}
}

// RWReadUnlock runs rwlock_readunlock.lua: release the read level of hold
// a.ID tagged a.Tag (a hold has one at a time: the handle counts its
// readers); when the lock becomes free, one waiting writer per process is
// woken. The id and tag name the level exactly: a.Lease is not needed,
// and a copy that runs late, or a retry whose first copy went through,
// changes nothing, even when the hold has taken a read level again since
// (under another tag). go-redis never retries it: after a network error
// the outcome is unknown, and only the caller knows how to read a retry.
func RWReadUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.ReaderKey(a.ID), k.ReaderPrefix, k.WriterChannel}
	return RWHoldsCmd{cmd: rwReadUnlock.run(ctx, c, keys, a.ID, flag(a.Sharded), a.Tag), release: true}
}

// RWWriteUnlock runs rwlock_writeunlock.lua: release the write level of
// hold a.ID. It wakes every waiting reader and one waiting writer per
// process; a hold with read levels stays a reader. A hold takes its write
// level once at most and an id is never reused, so the id names the level
// exactly: a.Lease is not needed, and a copy that runs
// late, or a retry whose first copy went through, changes nothing. Like
// RWReadUnlock, go-redis never retries it.
func RWWriteUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.ReaderKey(a.ID), k.Writers, k.ReadChannel, k.WriterChannel, k.Readers, k.Turn}
	return RWHoldsCmd{cmd: rwWriteUnlock.run(ctx, c, keys, a.ID, flag(a.Sharded)), release: true}
}

// RWRenew runs rwlock_renew.lua: extend the leases of hold id in every
// mode it has. The reply is false when it has nothing (nothing changed),
// and names another holder, the writer first, if anyone holds the lock.
func RWRenew(ctx context.Context, c redis.Scripter, k RWKeys, id string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rwlockRenew.queue(ctx, c, []string{k.Lock, k.ReaderKey(id)}, id, ms(lease)), rw: true}
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
// waiting writer (an announcement names the handle, which waits for one
// hold at a time) (or, if reader is set, as a waiting reader), waking the
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

// RWFieldNames are the lock hash's fields of one hold.
type RWFieldNames struct{ Read, Write string }

// RWFields returns the fields of hold id in a read-write lock's hash, as
// the rwlock scripts name them ('r:' .. id, 'w:' .. id).
func RWFields(id string) RWFieldNames {
	return RWFieldNames{Read: "r:" + id, Write: "w:" + id}
}
