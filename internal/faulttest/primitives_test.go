package faulttest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
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
	// key is the primitive's main Redis key; the suite matches the
	// primitive's script calls on it.
	key func(name string) string
	// held reports whether some handle holds the lock, as Redis sees it.
	held func(ctx context.Context, rdb redis.UniversalClient, name string) bool
	// notHeld reports whether err is the primitive's "not held" error.
	notHeld func(err error) bool
	// reentrant: Lock on a handle that holds the lock takes another level.
	reentrant bool
	// grants: its waiters stand in a line in Redis, and a release grants
	// the lock to the first live one (see internal/hold).
	grants bool
	// leased: a hold has a lease, renewed by the watchdog, and is lost
	// (Done closes) when it runs out. The faults that take a holder away
	// (killed, stalled, paused, a restart that loses the data) are only
	// survivable with a lease: the counting semaphore, whose permits are
	// not owned, skips them.
	leased bool
	// costly: the expensive cases (the chaos soak) run for it; they are
	// kept to one primitive to bound the suite's time.
	costly bool
	// newAcked, if set, is new with replica acknowledgement of every
	// acquisition (replicas replicas within timeout); ackFailed reports
	// whether err says an acquisition was not acknowledged.
	newAcked  func(rdb redis.UniversalClient, name string, lease time.Duration, replicas int, timeout time.Duration) locker
	ackFailed func(err error) bool
	// fenced, if set, is new with fencing tokens (WithFencing).
	fenced func(rdb redis.UniversalClient, name string, lease time.Duration) fencedLocker
}

// primitives is every primitive the suite runs against.
var primitives = []primitive{rlockPrimitive, fairlockPrimitive, leasedPrimitive, semaphorePrimitive}

// mainKey is the main key of every primitive called name.
func mainKey(name string) string { return keyspace.NewNames(name).Lock() }

// exists is held for the locks: the lock hash exists while it is held.
func exists(ctx context.Context, rdb redis.UniversalClient, name string) bool {
	return rdb.Exists(ctx, mainKey(name)).Val() == 1
}

var rlockPrimitive = primitive{
	name: "rlock",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease))
	},
	key:       mainKey,
	held:      exists,
	notHeld:   func(err error) bool { return errors.Is(err, rlock.ErrNotHeld) },
	reentrant: true,
	grants:    true,
	leased:    true,
	costly:    true,
	newAcked: func(rdb redis.UniversalClient, name string, lease time.Duration, replicas int, timeout time.Duration) locker {
		return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease), rlock.WithReplicaAck(replicas, timeout))
	},
	ackFailed: func(err error) bool { return errors.Is(err, rlock.ErrNotReplicated) },
	fenced: func(rdb redis.UniversalClient, name string, lease time.Duration) fencedLocker {
		return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease), rlock.WithFencing())
	},
}

var fairlockPrimitive = primitive{
	name: "fairlock",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(lease))
	},
	key:       mainKey,
	held:      exists,
	notHeld:   func(err error) bool { return errors.Is(err, fairlock.ErrNotHeld) },
	reentrant: true,
	grants:    true,
	leased:    true,
	fenced: func(rdb redis.UniversalClient, name string, lease time.Duration) fencedLocker {
		return fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(lease), fairlock.WithFencing())
	},
}

// leasedPrimitive is a Leased semaphore with one permit, taken with lease
// 0 (kept alive by the watchdog).
var leasedPrimitive = primitive{
	name: "leased",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return newLeasedLocker(rdb, name, lease)
	},
	key: mainKey,
	held: func(ctx context.Context, rdb redis.UniversalClient, name string) bool {
		return rdb.ZCard(ctx, mainKey(name)).Val() == 1
	},
	notHeld: func(err error) bool { return errors.Is(err, semaphore.ErrNotHeld) },
	leased:  true,
}

// semaphorePrimitive is a counting Semaphore with one permit.
var semaphorePrimitive = primitive{
	name: "semaphore",
	new: func(rdb redis.UniversalClient, name string, lease time.Duration) locker {
		return newCountingLocker(rdb, name, lease)
	},
	key: mainKey,
	held: func(ctx context.Context, rdb redis.UniversalClient, name string) bool {
		return rdb.Get(ctx, mainKey(name)).Val() == "0"
	},
	notHeld: func(err error) bool { return errors.Is(err, semaphore.ErrNotHeld) },
}

// primitiveNamed returns the primitive called name, for helper processes:
// one of primitives, or a variant that only some tests use.
func primitiveNamed(name string) (primitive, bool) {
	for _, p := range slices.Concat(primitives, []primitive{fairlockWait1s}) {
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

// forEachGranting runs f as a subtest for every primitive whose releases
// grant the lock to a waiter, and skips the others.
func forEachGranting(t *testing.T, f func(t *testing.T, p primitive)) {
	forEach(t, func(t *testing.T, p primitive) {
		if !p.grants {
			t.Skip("releases wake waiters; they grant nothing")
		}
		f(t, p)
	})
}

// forEachLeased runs f as a subtest for every primitive whose holds have
// a lease, and skips the others.
func forEachLeased(t *testing.T, f func(t *testing.T, p primitive)) {
	forEach(t, func(t *testing.T, p primitive) {
		if !p.leased {
			t.Skip("holds have no lease: a holder that goes away keeps them")
		}
		f(t, p)
	})
}
