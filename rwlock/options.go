package rwlock

import (
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// DefaultWatchdogTimeout is the lease of a hold kept alive by the watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// WaiterTimeout is how long the announcement of a waiting writer holds new
// readers back unless it is renewed. The writer's attempts renew it, and
// while the writer is parked its client does, once a second, so a writer
// that crashed while waiting blocks new readers for at most this long. A
// waiting reader's announcement lasts as long, and so a reader that
// crashed while waiting keeps the lock free in its turn after a write
// release (holding back writers, and new readers behind them) for at most
// this long too.
const WaiterTimeout = 2 * time.Second

// WriterPatience is WaiterTimeout.
//
// Deprecated: use WaiterTimeout, the name every waiting primitive gives
// this lifetime; this name goes in the next release.
const WriterPatience = WaiterTimeout

// Option configures an RWMutex.
type Option func(*config)

type config struct {
	hold.Keeping
	fencing bool
}

// keep makes a shared option one of this package.
func keep(o hold.KeepingOption) Option { return func(c *config) { o(&c.Keeping) } }

// WithLeaseTime gives every hold a fixed lease of d instead of the
// watchdog: a read or write hold frees itself d after the handle's last
// RLock or Lock, whether or not the holder is still working, and a
// re-entry in either mode re-arms the lease of both to d. Done closes when
// the lease runs out. d must be positive. The default is no fixed lease:
// the watchdog keeps the holds alive.
func WithLeaseTime(d time.Duration) Option { return keep(hold.LeaseTime("rwlock", d)) }

// WithWatchdogTimeout sets the lease of holds kept alive by the watchdog,
// which renews them every third of it. It bounds how long a crashed
// holder, reader or writer, blocks others. d must be at least 30ms. The
// default is DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option { return keep(hold.WatchdogTimeout("rwlock", d)) }

// WithFencing makes every first write acquisition take a fencing token,
// which [RWMutex.Token] returns while the write hold lasts: the larger of
// the name's counter + 1 and the Redis server's clock in microseconds.
// Tokens strictly increase across all handles and processes, and across
// Redis losing its data (see the package doc for the condition on the
// server's clock), so a resource that remembers the highest token it has
// seen can refuse a stale writer. Read holds take no token. The default is
// no fencing.
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
