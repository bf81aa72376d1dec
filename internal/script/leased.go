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

// LeasedKeys names the keys and channel of one leased semaphore.
type LeasedKeys struct {
	Leases  string // zset of acquired permit ids -> expiry on the server clock
	Permits string // the total permit count
	Channel string // the notification channel
	// Others are the keys other kinds of primitive keep under the name
	// (keyspace.Names.Others): SetPermits and AddPermits do not create a
	// total while one of them exists (WRONGTYPE). None: no check.
	Others []string
}

func (k LeasedKeys) list() []string { return []string{k.Leases, k.Permits, k.Channel} }

// LeaseTaken is the outcome of a leased semaphore acquire attempt.
type LeaseTaken struct {
	OK   bool          // the id holds a permit
	Wait time.Duration // when not OK: until the earliest acquired permit expires; 0 if none
	// Unset, when not OK: the semaphore has no total at all.
	Unset bool
}

// LeaseTakenCmd is the reply of LeasedAcquire.
type LeaseTakenCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c LeaseTakenCmd) Result() (LeaseTaken, error) {
	v, err := ints(c.cmd)
	if err != nil {
		return LeaseTaken{}, err
	}
	if len(v) < 2 {
		return LeaseTaken{}, errShortReply
	}
	if v[0] == 1 {
		return LeaseTaken{OK: true}, nil
	}
	return LeaseTaken{Wait: pttl(v[1]), Unset: len(v) > 2 && v[2] == 0}, nil
}

// LeasedAcquire runs leased_acquire.lua: take a permit for id with the given
// lease, after returning expired permits to the pool. A repeated request
// with the same id takes nothing more. A copy that runs after deadline
// (server time in milliseconds) takes nothing: its caller has given the
// id up and may have released it.
func LeasedAcquire(ctx context.Context, c Processor, k LeasedKeys, id string, lease time.Duration, sharded bool, deadline int64) LeaseTakenCmd {
	return LeaseTakenCmd{leasedAcquire.run(ctx, c, k.list(), id, ms(lease), flag(sharded), deadline)}
}

// LeasedRelease runs leased_release.lua: give back the permit of id and
// wake waiters. The reply is false when id held no permit (unknown, expired
// or already released; nothing changed). go-redis never retries it: a
// retry after a lost reply would report false for a permit the first run
// released, and only the caller knows how to read that.
func LeasedRelease(ctx context.Context, c Processor, k LeasedKeys, id string, sharded bool) BoolCmd {
	return BoolCmd{leasedRelease.run(ctx, c, k.list(), id, flag(sharded))}
}

// LeasedRenew runs leased_renew.lua: set the permit of id to expire lease
// from now. The reply is false when id holds no permit (nothing changed).
func LeasedRenew(ctx context.Context, c redis.Scripter, k LeasedKeys, id string, lease time.Duration, sharded bool) BoolCmd {
	return BoolCmd{leasedRenew.queue(ctx, c, k.list(), id, ms(lease), flag(sharded))}
}

// LeasedSetPermits runs leased_setpermits.lua: set the total permits to n
// (>= 0), acquired ones included, or with onlyNew only if there is no total
// yet, once for the request whose receipt key, which lives for ttl, is
// receipt: a repeated request reports success and changes nothing. The
// reply is false when onlyNew found a total (nothing changed). go-redis
// never resends it: the caller retries a lost reply while the receipt
// lives (exactly.Once).
func LeasedSetPermits(ctx context.Context, c Processor, k LeasedKeys, r Request, n int64, onlyNew, sharded bool) BoolCmd {
	return BoolCmd{leasedSetPermits.run(ctx, c, append(append(k.list(), r.Receipt), k.Others...), n, flag(onlyNew), flag(sharded), ms(r.TTL), r.Deadline)}
}

// LeasedAddPermits runs leased_addpermits.lua: add delta (non-zero; negative
// takes permits away) to the total, once for the request whose receipt
// key, which lives for ttl, is receipt: a repeated request adds nothing.
// The reply is the available count afterwards, which may be negative.
// go-redis never resends it, as LeasedSetPermits.
func LeasedAddPermits(ctx context.Context, c Processor, k LeasedKeys, r Request, delta int64, sharded bool) IntCmd {
	return IntCmd{leasedAddPermits.run(ctx, c, append(append(k.list(), r.Receipt), k.Others...), delta, flag(sharded), ms(r.TTL), r.Deadline)}
}

// LeasedAvailable runs leased_available.lua: the total minus the live
// acquired permits, after returning expired ones to the pool. It may be
// negative.
func LeasedAvailable(ctx context.Context, c redis.Scripter, k LeasedKeys, sharded bool) IntCmd {
	return IntCmd{leasedAvailable.queue(ctx, c, k.list(), flag(sharded))}
}
