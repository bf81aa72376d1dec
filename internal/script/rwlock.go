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

// RWKeys names the keys of one read-write lock.
type RWKeys struct {
	Lock          string // mode and one field per hold and mode
	Writers       string // zset of announced waiting writers
	Readers       string // zset of announced waiting readers
	Turn          string // zset of the readers whose turn it is
	ReaderPrefix  string
	ReadChannel   string
	WriterChannel string
	Fence         string
	Others        []string // keyspace.Names.Others: refuse the name while one exists
}

// ReaderKey is hold id's read lease key: per hold, so a given-up hold's
// reads lapse.
func (k RWKeys) ReaderKey(id string) string { return k.ReaderPrefix + id }

// RWHolds is the outcome of a read-write lock acquire or release.
type RWHolds struct {
	OK      bool
	NotHeld bool          // release: no level of that mode
	Upgrade bool          // write acquire refused: the hold has read levels
	Reads   int64         // read level afterwards (0 or 1), when OK
	Writes  int64         // write level afterwards (0 or 1), when OK
	Token   uint64        // write acquire's fencing token, else 0
	Wait    time.Duration // refused: the blocker's remaining lease; 0 if unknown
}

// RWHoldsCmd is the reply of the read-write lock's acquires and releases.
type RWHoldsCmd struct {
	cmd     *redis.Cmd
	release bool
}

func (c RWHoldsCmd) Result() (RWHolds, error) {
	v, err := ints(c.cmd, 1)
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
	ID       string // "<owner id>:<n>", one per hold, never reused
	Lease    time.Duration
	Announce bool // a refused attempt announces a waiting reader for Patience
	Patience time.Duration
	Deadline int64
	// Tag names the level, so a late release spares a later one.
	Tag uint64
}

// RWReadTake runs rwlock_readlock.lua for hold a.ID.
func RWReadTake(ctx context.Context, c Processor, k RWKeys, a RWReadArgs) RWHoldsCmd {
	keys := append([]string{k.Lock, k.Writers, k.ReaderKey(a.ID), k.Readers, k.Turn}, k.Others...)
	args := []any{a.ID, ms(a.Lease), flag(a.Announce), ms(a.Patience), a.Deadline, a.Tag}
	return RWHoldsCmd{cmd: rwReadLock.run(ctx, c, keys, args...)}
}

// RWWriteArgs are the arguments of RWWriteTake, as RWReadArgs.
type RWWriteArgs struct {
	ID       string
	Lease    time.Duration
	Fencing  bool
	Announce bool
	Patience time.Duration
	Deadline int64
}

// RWWriteTake runs rwlock_writelock.lua for hold a.ID.
func RWWriteTake(ctx context.Context, c Processor, k RWKeys, a RWWriteArgs) RWHoldsCmd {
	keys := append([]string{k.Lock, k.Writers, k.ReaderKey(a.ID), k.Turn, k.Fence}, k.Others...)
	args := []any{a.ID, ms(a.Lease), flag(a.Announce), ms(a.Patience), flag(a.Fencing), a.Deadline}
	return RWHoldsCmd{cmd: rwWriteLock.run(ctx, c, keys, args...)}
}

// RWReadUnlock runs rwlock_readunlock.lua for a.ID's level tagged a.Tag.
func RWReadUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.ReaderKey(a.ID), k.ReaderPrefix, k.WriterChannel}
	return RWHoldsCmd{cmd: rwReadUnlock.run(ctx, c, keys, a.ID, flag(a.Sharded), a.Tag), release: true}
}

// RWWriteUnlock runs rwlock_writeunlock.lua for hold a.ID.
func RWWriteUnlock(ctx context.Context, c Processor, k RWKeys, a ReleaseArgs) RWHoldsCmd {
	keys := []string{k.Lock, k.ReaderKey(a.ID), k.Writers, k.ReadChannel, k.WriterChannel, k.Readers, k.Turn}
	return RWHoldsCmd{cmd: rwWriteUnlock.run(ctx, c, keys, a.ID, flag(a.Sharded)), release: true}
}

// RWRenew runs rwlock_renew.lua for hold id.
func RWRenew(ctx context.Context, c redis.Scripter, k RWKeys, id string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rwlockRenew.queue(ctx, c, []string{k.Lock, k.ReaderKey(id)}, id, ms(lease)), rw: true}
}

// RWForceUnlock runs rwlock_forceunlock.lua, as FairForceUnlock.
func RWForceUnlock(ctx context.Context, c Processor, k RWKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	keys := []string{k.Lock, k.ReaderPrefix, k.Writers, k.ReadChannel, k.WriterChannel, receipt, k.Readers, k.Turn}
	return IntCmd{rwlockForceUnlock.run(ctx, c, keys, append([]any{flag(sharded), ms(ttl)}, aim...)...)}
}

// RWWithdraw runs rwlock_withdraw.lua; false when owner was not announced.
func RWWithdraw(ctx context.Context, c Processor, k RWKeys, owner string, reader, sharded bool, deadline int64) BoolCmd {
	keys := []string{k.Writers, k.ReadChannel, k.Readers, k.Turn, k.WriterChannel}
	side := "w"
	if reader {
		side = "r"
	}
	return BoolCmd{rwlockWithdraw.run(ctx, c, keys, owner, flag(sharded), side, deadline)}
}

// RWFields returns the lock hash's fields of hold id, as the rwlock
// scripts name them.
func RWFields(id string) (read, write string) { return "r:" + id, "w:" + id }
