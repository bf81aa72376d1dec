package hold

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/watchdog"
)

// MinWatchdogTimeout is the shortest watchdog timeout a lock accepts.
const MinWatchdogTimeout = 30 * time.Millisecond

// Keeping is how a lock keeps its holds alive and what it does when one is
// lost: the options every lock package shares, which check their argument
// where the option is written.
type Keeping struct {
	LeaseTime       time.Duration // a fixed lease; 0: the watchdog keeps holds alive
	WatchdogTimeout time.Duration // the lease of holds kept alive by the watchdog
	OnLost          func(error)   // called once when a hold is lost; nil: none
	NoPubSub        bool          // WithoutPubSub: the client's waiters poll (see hub.Poll)
}

// KeepingOption sets one field of a Keeping.
type KeepingOption func(*Keeping)

// NoPubSub is WithoutPubSub of every lock package.
func NoPubSub() KeepingOption { return func(k *Keeping) { k.NoPubSub = true } }

// LeaseTime is WithLeaseTime of package pkg. It panics unless d > 0.
func LeaseTime(pkg string, d time.Duration) KeepingOption {
	if d <= 0 {
		panic(fmt.Sprintf("%s: WithLeaseTime(%v): lease must be positive", pkg, d))
	}
	return func(k *Keeping) { k.LeaseTime = d }
}

// WatchdogTimeout is WithWatchdogTimeout of package pkg. It panics unless
// d >= MinWatchdogTimeout.
func WatchdogTimeout(pkg string, d time.Duration) KeepingOption {
	if d < MinWatchdogTimeout {
		panic(fmt.Sprintf("%s: WithWatchdogTimeout(%v): timeout must be at least %v", pkg, d, MinWatchdogTimeout))
	}
	return func(k *Keeping) { k.WatchdogTimeout = d }
}

// OnLost is WithOnLost.
func OnLost(f func(error)) KeepingOption {
	return func(k *Keeping) { k.OnLost = f }
}

// Lease returns the lease every acquisition and renewal sets.
func (k Keeping) Lease() time.Duration {
	if k.LeaseTime > 0 {
		return k.LeaseTime
	}
	return k.WatchdogTimeout
}

// Config returns the Config of a lock kept as k; wrap decorates a loss for
// the OnLost hook.
func (k Keeping) Config(
	rdb redis.UniversalClient,
	release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error),
	renew func(ctx context.Context, s redis.Scripter, id string) func() (bool, error),
	wrap func(error) error,
) Config {
	c := Config{RDB: rdb, Lease: k.Lease(), Release: release}
	if k.LeaseTime == 0 {
		c.Renew = renew
	}
	if k.OnLost != nil {
		c.Lost = func(err error) { k.OnLost(wrap(err)) }
	}
	return c
}

// Renewal returns what a renewal queued as c reports to the watchdog: the
// hold is there, or an error naming who holds the lock instead.
func Renewal(c script.RenewCmd) func() (bool, error) {
	return func() (bool, error) {
		held, err := c.Result()
		if h := c.Holder(); !held && err == nil && h.Owner != "" {
			return false, takenOver(h)
		}
		return held, err
	}
}

// takenOver is the reason of a loss whose renewal found another holder:
// "the lock was taken over: it is held by pid 4121 on web-3 (owner id …)".
// It matches watchdog.ErrGone.
type takenOver script.Holder

func (t takenOver) Error() string {
	how := "held"
	switch t.Mode {
	case "write":
		how = "held for writing"
	case "read":
		how = "held for reading"
	}
	return "the lock was taken over: it is " + how + " by " + keyspace.DescribeOwner(t.Owner)
}

func (takenOver) Is(target error) bool { return target == watchdog.ErrGone }
