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

// LockKeys names the keys of one reentrant lock.
type LockKeys struct {
	Lock     string
	Fence    string
	Queue    string
	Places   string        // prefix of the waiters' places (+ owner id)
	Patience time.Duration // the longest a place lives
	Waiter   string        // prefix of the waiters' channels (+ owner id)
	Channel  string        // told "1" when a release leaves the lock free
	Others   []string      // keyspace.Names.Others: refuse the name while one exists
}

// Acquired is the outcome of an acquire attempt.
type Acquired struct {
	OK    bool
	Holds int64         // the hold's levels, when OK
	Token uint64        // 0 if none
	Wait  time.Duration // the holder's remaining lease when not OK; 0 if unknown
}

// AcquireCmd is the reply of ReentrantTake and FairTake.
type AcquireCmd struct{ cmd *redis.Cmd }

func (c AcquireCmd) Result() (Acquired, error) {
	if n, ok := c.cmd.Val().(int64); ok && n >= 1 && c.cmd.Err() == nil {
		// A first acquisition answers 1 or its token: a table costs more.
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

// TakeArgs are the arguments of ReentrantTake, as FairTakeArgs.
type TakeArgs struct {
	ID       string
	Lease    time.Duration
	Fencing  bool
	Patience time.Duration
	Deadline int64
	Seq      uint64
	// Placed: the owner may have a place in line, which an acquisition
	// gives up. Unset, the script does not look: one command fewer.
	Placed bool
	// Watched: the handle has hold.Watchers, so a refused attempt asks
	// the holder's release to publish (else it does not).
	Watched bool
}

// ReentrantTake runs rlock_acquire.lua for hold a.ID, as FairTake.
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

// UnlockNotHeld is a release's outcome when its hold id holds nothing.
const UnlockNotHeld = -1

// ReentrantUnlock runs rlock_unlock.lua for hold a.ID, as FairUnlock.
func ReentrantUnlock(ctx context.Context, c Processor, k LockKeys, a ReleaseArgs) UnlockCmd {
	keys := []string{k.Lock, k.Queue, k.Fence, k.Channel}
	args := []any{a.ID, ms(a.Lease), flag(a.Sharded), k.Waiter, ms(a.GrantLease), k.Places, ms(k.Patience)}
	return UnlockCmd{rlockUnlock.run(ctx, c, keys, args...)}
}

// ReleaseArgs are the arguments of the release scripts.
type ReleaseArgs struct {
	ID         string
	Lease      time.Duration // for the fencing counter
	Sharded    bool
	GrantLease time.Duration // a mutex's
	Tag        uint64        // RWReadUnlock's: the read level's RWReadArgs.Tag
}

// ReentrantRenew runs rlock_renew.lua for hold id.
func ReentrantRenew(ctx context.Context, c redis.Scripter, lock, id string, lease time.Duration) RenewCmd {
	return RenewCmd{cmd: rlockRenew.queue(ctx, c, []string{lock}, id, ms(lease))}
}

// ReentrantForceUnlock runs rlock_forceunlock.lua, as FairForceUnlock.
func ReentrantForceUnlock(ctx context.Context, c Processor, k LockKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	args := append([]any{flag(sharded), ms(ttl), k.Waiter}, aim...)
	return IntCmd{rlockForceUnlock.run(ctx, c, []string{k.Lock, k.Queue, receipt, k.Channel}, args...)}
}

// ReentrantLeave runs rlock_leave.lua, as FairLeave.
func ReentrantLeave(ctx context.Context, c Processor, k LockKeys, id string) IntCmd {
	return IntCmd{rlockLeave.run(ctx, c, []string{k.Lock, k.Queue, k.Places + OwnerOf(id)}, id)}
}
