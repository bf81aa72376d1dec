package script

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	leasedAcquire    = load("leased_acquire.lua")
	leasedRelease    = load("leased_release.lua")
	leasedRenew      = load("leased_renew.lua")
	leasedSetPermits = load("leased_setpermits.lua")
	leasedAddPermits = load("leased_addpermits.lua")
	leasedAvailable  = load("leased_available.lua")
)

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
