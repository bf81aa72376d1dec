package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
)

// locker is what the fault suite needs of a primitive: an exclusive hold
// that can be taken, given back, and that reports its end. A primitive
// with shared holds (read locks, permits) plugs in its exclusive side, or
// a one-permit semaphore.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	// Done is closed when the current hold ends or is lost.
	Done() <-chan struct{}
}

// primitive adapts one redisync primitive to the suite.
type primitive struct {
	name string
	// new returns a handle on the lock called name whose holds are kept
	// alive by the watchdog with the given lease (watchdog timeout).
	new func(rdb redis.UniversalClient, name string, lease time.Duration) locker
	// key is the Redis key that exists while the lock is held; the suite
	// matches the primitive's script calls on it.
	key func(name string) string
	// notHeld reports whether err is the primitive's "not held" error.
	notHeld func(err error) bool
	// reentrant: Lock on a handle that holds the lock takes another level.
	reentrant bool
	// newAcked, if set, is new with replica acknowledgement of every
	// acquisition (replicas replicas within timeout); ackFailed reports
	// whether err says an acquisition was not acknowledged.
	newAcked  func(rdb redis.UniversalClient, name string, lease time.Duration, replicas int, timeout time.Duration) locker
	ackFailed func(err error) bool
}

// primitives is every primitive the suite runs against.
var primitives = []primitive{rlockPrimitive}

var rlockPrimitive = primitive{
	name: "rlock",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease))
	},
	key:       func(name string) string { return "redisync:{" + name + "}" },
	notHeld:   func(err error) bool { return errors.Is(err, rlock.ErrNotHeld) },
	reentrant: true,
	newAcked: func(rdb redis.UniversalClient, name string, lease time.Duration, replicas int, timeout time.Duration) locker {
		return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease), rlock.WithReplicaAck(replicas, timeout))
	},
	ackFailed: func(err error) bool { return errors.Is(err, rlock.ErrNotReplicated) },
}

// primitiveNamed returns the primitive called name, for helper processes.
func primitiveNamed(name string) (primitive, bool) {
	for _, p := range primitives {
		if p.name == name {
			return p, true
		}
	}
	return primitive{}, false
}

// forEach runs f as a subtest for every primitive.
func forEach(t *testing.T, f func(t *testing.T, p primitive)) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) { f(t, p) })
	}
}
