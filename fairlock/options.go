package fairlock

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// DefaultWatchdogTimeout is the lease of a hold kept alive by the watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// DefaultWaiterTimeout is how long a waiter that stopped refreshing its
// place (its process crashed) keeps its place in line; the lock passes it
// by once it has been silent for a grant lease (see the package doc).
const DefaultWaiterTimeout = 10 * time.Second

// minWaiterTimeout leaves a live waiter, which refreshes its place every
// third of the timeout, room for a few slow round trips.
const minWaiterTimeout = 100 * time.Millisecond

// Option configures a Mutex.
type Option func(*config)

type config struct {
	hold.Keeping
	waiterTimeout time.Duration
	fencing       bool
}

// keep makes a shared option one of this package.
func keep(o hold.KeepingOption) Option { return func(c *config) { o(&c.Keeping) } }

// WithLeaseTime gives every hold a fixed lease of d instead of the
// watchdog: the lock frees itself d after the last Lock, whether or not the
// holder is still working, and a re-entry re-arms the lease to d. Done
// closes when the lease runs out. d must be positive. The default is no
// fixed lease: the watchdog keeps the hold alive.
func WithLeaseTime(d time.Duration) Option { return keep(hold.LeaseTime("fairlock", d)) }

// WithWatchdogTimeout sets the lease of holds kept alive by the watchdog,
// which renews them every third of it. It bounds how long a crashed
// holder blocks others. d must be at least 30ms. The default is
// DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option { return keep(hold.WatchdogTimeout("fairlock", d)) }

// WithWaiterTimeout sets how long a waiter keeps its place in line without
// refreshing it. A waiting Lock refreshes its deadline at least every
// third of d, however long the holder keeps the lock, and its client its
// place every second, so only a waiter whose process died or lost Redis
// for d is dropped from the line.
// The lock passes by a waiter silent for the shorter of d and the grant
// lease (3s) already, and a grant to a waiter whose process died just
// before lasts as long (see the package doc), so a dead waiter blocks the
// waiters behind it for at most that long. A live waiter's process must
// then complete a grant within d too (it does in a wake-up): one that
// stalls for longer loses the grant and its place in line, as it loses
// its place when it stops refreshing it. d must be at least 100ms. The
// default is DefaultWaiterTimeout.
func WithWaiterTimeout(d time.Duration) Option {
	if d < minWaiterTimeout {
		panic(fmt.Sprintf("fairlock: WithWaiterTimeout(%v): timeout must be at least %v", d, minWaiterTimeout))
	}
	return func(c *config) { c.waiterTimeout = d }
}

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

// grantLease is how long a waiter's place lives from its last refresh,
// and how long a grant to it lasts: the grant lease, or the waiter
// timeout if shorter, so that a waiter whose process died blocks those
// behind it for no longer than either.
func (c *config) grantLease() time.Duration {
	return min(c.waiterTimeout, hold.GrantLease)
}

// maxSleep bounds every sleep of a waiting Lock: a third of the waiter
// timeout, so that the attempt that refreshes the waiter's place runs well
// before its deadline, and never longer than a lease.
func (c *config) maxSleep() time.Duration {
	return min(c.waiterTimeout/3, c.Lease())
}

// newConfig applies opts to the defaults.
func newConfig(opts []Option) config {
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}, waiterTimeout: DefaultWaiterTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithoutPubSub makes every waiter on the handle's Redis client ask
// Redis whether it may proceed about every 25ms (jittered) instead of
// subscribing to grant notifications: for a proxy without pub/sub (twemproxy) or an ACL
// user without channel rights, without first finding out that the server
// refuses subscriptions. It is a setting of the client, not of the
// handle: the waiters of every handle on one client share its subscriptions,
// so from New on every waiter on that client polls. The default is to
// subscribe, and to poll from the first subscription the server refuses.
func WithoutPubSub() Option { return keep(hold.NoPubSub()) }
