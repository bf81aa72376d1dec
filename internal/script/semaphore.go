package script

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	semaphoreAcquire    = load("semaphore_acquire.lua")
	semaphoreRelease    = load("semaphore_release.lua")
	semaphoreSetPermits = load("semaphore_setpermits.lua")
	semaphoreDrain      = load("semaphore_drain.lua")
	semaphoreUndo       = load("semaphore_undo.lua")
	leasedAcquire       = load("leased_acquire.lua")
	leasedRelease       = load("leased_release.lua")
	leasedRenew         = load("leased_renew.lua")
	leasedSetPermits    = load("leased_setpermits.lua")
	leasedAddPermits    = load("leased_addpermits.lua")
	leasedAvailable     = load("leased_available.lua")
)

// SemaphoreKeys names the keys of one counting semaphore.
type SemaphoreKeys struct {
	Permits string
	Channel string
	Others  []string // keyspace.Names.Others: create no count while one exists
}

// Taken is the outcome of a counting semaphore acquire attempt.
type Taken struct {
	OK        bool
	Cancelled bool  // by SemaphoreUndo: it takes nothing
	Available int64 // may be negative
	Unset     bool  // refused: the semaphore has no count
}

// TakenCmd is the reply of SemaphoreAcquire.
type TakenCmd struct{ cmd *redis.Cmd }

func (c TakenCmd) Result() (Taken, error) {
	v, err := ints(c.cmd, 2)
	if err != nil {
		return Taken{}, err
	}
	return Taken{OK: v[0] == 1, Cancelled: v[0] == -1, Available: v[1], Unset: len(v) > 2 && v[0] == 0}, nil
}

// settled: acquire receipts whose outcome is known, for the script to delete.

// SemaphoreAcquire runs semaphore_acquire.lua. A lost reply is undone
// (SemaphoreUndo), not resent: past the receipt it would take twice.
func SemaphoreAcquire(ctx context.Context, c Processor, k SemaphoreKeys, r Request, n int64, settled []string) TakenCmd {
	return TakenCmd{semaphoreAcquire.run(ctx, c, append([]string{k.Permits, r.Receipt}, settled...), n, ms(r.TTL), r.Deadline)}
}

// SemaphoreRelease runs semaphore_release.lua: the available count after.
func SemaphoreRelease(ctx context.Context, c Processor, k SemaphoreKeys, r Request, delta int64, sharded bool, settled []string) IntCmd {
	keys := append(append([]string{k.Permits, k.Channel, r.Receipt}, k.Others...), settled...)
	return IntCmd{semaphoreRelease.run(ctx, c, keys, delta, flag(sharded), ms(r.TTL), r.Deadline, len(k.Others))}
}

// SemaphoreSetPermits runs semaphore_setpermits.lua; false if onlyNew failed.
func SemaphoreSetPermits(ctx context.Context, c Processor, k SemaphoreKeys, r Request, n int64, onlyNew, sharded bool, settled []string) BoolCmd {
	keys := append(append([]string{k.Permits, k.Channel, r.Receipt}, k.Others...), settled...)
	return BoolCmd{semaphoreSetPermits.run(ctx, c, keys, n, flag(onlyNew), flag(sharded), ms(r.TTL), r.Deadline, len(k.Others))}
}

// SemaphoreDrain runs semaphore_drain.lua; the reply is how many it took.
func SemaphoreDrain(ctx context.Context, c Processor, k SemaphoreKeys, r Request, settled []string) IntCmd {
	return IntCmd{semaphoreDrain.run(ctx, c, append([]string{k.Permits, r.Receipt}, settled...), ms(r.TTL), r.Deadline)}
}

// SemaphoreUndo runs semaphore_undo.lua: cancel r's acquire for good; the
// reply is the permits given back.
func SemaphoreUndo(ctx context.Context, c Processor, k SemaphoreKeys, r Request, sharded bool, settled []string) IntCmd {
	return IntCmd{semaphoreUndo.run(ctx, c, append([]string{k.Permits, r.Receipt, k.Channel}, settled...), ms(r.TTL), flag(sharded), r.Deadline)}
}

// LeasedKeys names the keys of one leased semaphore.
type LeasedKeys struct {
	Leases  string // zset: permit id -> expiry on the server clock
	Permits string // the total
	Channel string
	Others  []string // keyspace.Names.Others: create no total while one exists
}

func (k LeasedKeys) list() []string { return []string{k.Leases, k.Permits, k.Channel} }

// LeaseTaken is the outcome of a leased semaphore acquire attempt.
type LeaseTaken struct {
	OK    bool
	Wait  time.Duration // until the earliest permit expires; 0 if none
	Unset bool          // the semaphore has no total
}

// LeaseTakenCmd is the reply of LeasedAcquire.
type LeaseTakenCmd struct{ cmd *redis.Cmd }

func (c LeaseTakenCmd) Result() (LeaseTaken, error) {
	v, err := ints(c.cmd, 2)
	if err != nil {
		return LeaseTaken{}, err
	}
	if v[0] == 1 {
		return LeaseTaken{OK: true}, nil
	}
	return LeaseTaken{Wait: pttl(v[1]), Unset: len(v) > 2 && v[2] == 0}, nil
}

// LeasedAcquire runs leased_acquire.lua: a permit for id.
func LeasedAcquire(ctx context.Context, c Processor, k LeasedKeys, id string, lease time.Duration, sharded bool, deadline int64) LeaseTakenCmd {
	return LeaseTakenCmd{leasedAcquire.run(ctx, c, k.list(), id, ms(lease), flag(sharded), deadline)}
}

// LeasedRelease runs leased_release.lua; false when id held no permit (so
// a resend would misreport the first run).
func LeasedRelease(ctx context.Context, c Processor, k LeasedKeys, id string, sharded bool) BoolCmd {
	return BoolCmd{leasedRelease.run(ctx, c, k.list(), id, flag(sharded))}
}

// LeasedRenew runs leased_renew.lua; false when id holds no permit.
func LeasedRenew(ctx context.Context, c redis.Scripter, k LeasedKeys, id string, lease time.Duration, sharded bool) BoolCmd {
	return BoolCmd{leasedRenew.queue(ctx, c, k.list(), id, ms(lease), flag(sharded))}
}

// LeasedSetPermits runs leased_setpermits.lua; false if onlyNew failed.
func LeasedSetPermits(ctx context.Context, c Processor, k LeasedKeys, r Request, n int64, onlyNew, sharded bool) BoolCmd {
	return BoolCmd{leasedSetPermits.run(ctx, c, append(append(k.list(), r.Receipt), k.Others...), n, flag(onlyNew), flag(sharded), ms(r.TTL), r.Deadline)}
}

// LeasedAddPermits runs leased_addpermits.lua: the available count after.
func LeasedAddPermits(ctx context.Context, c Processor, k LeasedKeys, r Request, delta int64, sharded bool) IntCmd {
	return IntCmd{leasedAddPermits.run(ctx, c, append(append(k.list(), r.Receipt), k.Others...), delta, flag(sharded), ms(r.TTL), r.Deadline)}
}

// LeasedAvailable runs leased_available.lua.
func LeasedAvailable(ctx context.Context, c redis.Scripter, k LeasedKeys, sharded bool) IntCmd {
	return IntCmd{leasedAvailable.queue(ctx, c, k.list(), flag(sharded))}
}
