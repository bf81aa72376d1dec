package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// guardedFloor is a reference for the server time of redisync rlock's
// uncontended pair: the least two scripts cost that keep the checks
// rlock's acquire and release make on the way, written for the page. The
// acquire refuses a copy that runs after its deadline on the server's
// clock (TIME), finds the name free with one EXISTS of the lock and the
// keys other kinds keep under the name, and takes it with HSET and
// PEXPIRE; the release checks the hold id's field, pops the waiter list
// (where rlock's grant would start) and deletes the hash. Nothing else:
// no fencing, no waiting, no re-entry, no watchers. Issue 41's target of
// 0.8x the Redisson algorithm's server time is measured against it: a
// floor above the target says the target conflicts with these checks.
const guardedFloor = "rlock's checks alone"

var floorAcquire = redis.NewScript(`
local clock = redis.call('time')
if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > tonumber(ARGV[3]) then
	return redis.error_reply('LATE')
end
if redis.call('exists', unpack(KEYS)) > 0 then
	return 0
end
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return 1`)

var floorRelease = redis.NewScript(`
if not redis.call('hget', KEYS[1], ARGV[1]) then
	return -1
end
if redis.call('lpop', KEYS[2]) then
	return 2
end
redis.call('del', KEYS[1])
return 0`)

// floorLocker is a handle on a lock of the floor's two scripts, under
// the keys rlock would use for the same name.
type floorLocker struct {
	rdb     *redis.Client
	acquire []string // the lock hash, then the other kinds' keys
	release []string // the lock hash and the waiter list
	id      string
}

func newGuardedFloor(rdb *redis.Client, key string) locker {
	tag := "redisync:{" + key + "}"
	return &floorLocker{rdb: rdb, id: rand.Text() + ":1",
		acquire: []string{tag, tag + ":writers", tag + ":readers", tag + ":turn", tag + ":permits"},
		release: []string{tag, tag + ":queue"}}
}

func (l *floorLocker) Lock(ctx context.Context) error {
	deadline := strconv.FormatInt(time.Now().Add(5*time.Second).UnixMilli(), 10)
	n, err := floorAcquire.Run(ctx, l.rdb, l.acquire, l.id, redissonLease, deadline).Int()
	if err == nil && n != 1 {
		err = errBusy
	}
	return err
}

func (l *floorLocker) Unlock(ctx context.Context) error {
	n, err := floorRelease.Run(ctx, l.rdb, l.release, l.id).Int()
	if err == nil && n != 0 {
		err = fmt.Errorf("%s: unlock %q: %d", guardedFloor, l.acquire[0], n)
	}
	if errors.Is(err, redis.Nil) {
		err = fmt.Errorf("%s: unlock %q: no reply", guardedFloor, l.acquire[0])
	}
	return err
}
