package rlock

import (
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// DefaultWatchdogTimeout is the lease of a hold kept alive by the watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// Option configures a Mutex.
type Option func(*config)

type config struct {
	hold.Keeping
	fencing     bool
	ackReplicas int           // WithReplicaAck; 0: no acknowledgement
	ackTimeout  time.Duration // WithReplicaAck
}

// keep makes a shared option one of this package.
func keep(o hold.KeepingOption) Option { return func(c *config) { o(&c.Keeping) } }

// WithLeaseTime gives every hold a fixed lease of d instead of the
// watchdog: the lock frees itself d after the last Lock, whether or not the
// holder is still working, and a re-entry re-arms the lease to d. Done
// closes when the lease runs out. d must be positive. The default is no
// fixed lease: the watchdog keeps the hold alive.
func WithLeaseTime(d time.Duration) Option { return keep(hold.LeaseTime("rlock", d)) }

// WithWatchdogTimeout sets the lease of holds kept alive by the watchdog,
// which renews them every third of it. It bounds how long a crashed
// holder blocks others. d must be at least 30ms. The default is
// DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option { return keep(hold.WatchdogTimeout("rlock", d)) }

// WithFencing makes every first acquisition take a new fencing token,
// which Token returns: the larger of the name's counter + 1 and the Redis
// server's clock in microseconds. Tokens strictly increase across all
// handles and processes, and across Redis losing its data (see the package
// doc for the condition on the server's clock), so a resource that
// remembers the highest token it has seen can refuse a stale holder. The
// default is no fencing.
func WithFencing() Option {
	return func(c *config) { c.fencing = true }
}

// WithOnLost sets a function called once when a hold is lost rather than
// released: its lease ran out, someone force-unlocked it, or renewals kept
// failing. It runs on the watchdog goroutine and must not block. The
// default is none; Done reports the loss either way.
func WithOnLost(f func(err error)) Option { return keep(hold.OnLost(f)) }

// newConfig applies opts to the defaults.
func newConfig(opts []Option) config {
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithoutPubSub makes every waiter on the handle's Redis client ask
// Redis whether it may proceed about every 25ms (jittered) instead of
// subscribing to release notifications: for a proxy without pub/sub (twemproxy) or an ACL
// user without channel rights, without first finding out that the server
// refuses subscriptions. It is a setting of the client, not of the
// handle: the waiters of every handle on one client share its subscriptions,
// so from New on every waiter on that client polls. The default is to
// subscribe, and to poll from the first subscription the server refuses.
func WithoutPubSub() Option { return keep(hold.NoPubSub()) }
