package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
)

// redissonAlg is a reference for redisync rlock's uncontended pair (issue
// 41), written for the page from the published algorithm of Redisson's
// reentrant lock, not from its code: a hash whose one field, the owner's
// id, counts the owner's holds. It is the algorithm a Redis reentrant lock
// is commonly judged against, so its server time is what rlock's two
// scripts are held to. It has no waiting protocol of its own (Redisson's
// waiters subscribe to the channel and retry), so it runs only in the
// uncontended scenarios.
const redissonAlg = "Redisson algorithm"

// redissonAcquire takes the hash KEYS[1] for the field ARGV[2] when the
// hash is absent or already holds that field, adding a hold and setting
// the lease ARGV[1] (ms); it returns nil then. Held by another field, it
// returns the lease left (PTTL), which a waiter would wait for.
var redissonAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])`)

// redissonRelease drops one hold of the field ARGV[3] on the hash KEYS[1]:
// while holds remain it renews the lease ARGV[2] (ms) and returns 0; the
// last one deletes the hash and publishes ARGV[1] on KEYS[2], for the
// waiters, and returns 1. A field that holds nothing gets nil.
var redissonRelease = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
	redis.call('pexpire', KEYS[1], ARGV[2])
	return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)

// redissonLease is the lease both scripts set, in milliseconds: rlock's
// watchdog lease, which Redisson's watchdog default is too, so that the
// two set the same expiry.
var redissonLease = strconv.FormatInt(rlock.DefaultWatchdogTimeout.Milliseconds(), 10)

// redissonLocker is a handle on a lock of the Redisson algorithm; its
// field is a random owner id of its own.
type redissonLocker struct {
	rdb   *redis.Client
	keys  []string // the hash, and the channel the release publishes on
	owner string
}

func newRedissonAlg(rdb *redis.Client, key string) locker {
	// The channel is named after the key, so that a waiter knows where to
	// listen from the name alone.
	return &redissonLocker{rdb: rdb, keys: []string{key, key + ":released"}, owner: rand.Text()}
}

func (l *redissonLocker) Lock(ctx context.Context) error {
	err := redissonAcquire.Run(ctx, l.rdb, l.keys[:1], redissonLease, l.owner).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return nil // a nil reply: taken
	case err == nil:
		return errBusy // the lease left of another owner's hold
	}
	return err
}

func (l *redissonLocker) Unlock(ctx context.Context) error {
	// The message says only that the lock is free: that is all a waiter
	// of the algorithm needs to try again.
	n, err := redissonRelease.Run(ctx, l.rdb, l.keys, "0", redissonLease, l.owner).Int()
	switch {
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("%s: unlock %q: not held", redissonAlg, l.keys[0])
	case err == nil && n != 1:
		// The scenarios never lock twice before unlocking.
		return fmt.Errorf("%s: unlock %q: still held", redissonAlg, l.keys[0])
	}
	return err
}
