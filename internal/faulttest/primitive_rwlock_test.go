package faulttest_test

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rwlock"
)

// rwlockPrimitive is the write side of the read-write lock: the suite's
// locker is exclusive, and so are write holds. Readers share the lock, so
// they cannot stand in for a locker; the faults that concern them, a
// reader against a writer, are in rwlock_reader_test.go. Not costly: the
// soak stays rlock's.
var rwlockPrimitive = primitive{
	name: "rwlock",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease))
	},
	key:       mainKey,
	held:      exists, // the lock hash, in either mode
	notHeld:   func(err error) bool { return errors.Is(err, rwlock.ErrNotHeld) },
	reentrant: true,
	leased:    true,
	fenced: func(rdb redis.UniversalClient, name string, lease time.Duration) fencedLocker {
		return rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithFencing())
	},
}

func init() { primitives = append(primitives, rwlockPrimitive) }
