package election

import (
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// DefaultWatchdogTimeout is the lease of a leadership kept alive by the
// watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// WaiterTimeout is how long a candidate whose process stopped refreshing
// its place (it crashed) keeps its place in line; the leadership passes
// it by once it has been silent for a grant lease (3s). Every waiting
// primitive names this lifetime the same way (rlock.WaiterTimeout,
// rwlock.WaiterTimeout, fairlock.WithWaiterTimeout).
const WaiterTimeout = 10 * time.Second

// CandidateTimeout is WaiterTimeout.
//
// Deprecated: use WaiterTimeout; this name goes in the next release.
const CandidateTimeout = WaiterTimeout

// observeInterval bounds how long a change of leader can stay hidden
// from an observer whose notification was lost: Observe reads the leader
// again at least this often.
const observeInterval = time.Second

// ObserveInterval is how often Observe reads the leader again; it cannot
// be set.
//
// Deprecated: a tuning constant, unexported from the next release.
const ObserveInterval = observeInterval

// MaxValueSize is the largest value a candidate or a leader may have, in
// bytes.
const MaxValueSize = 64 << 10

// Option configures an Election.
type Option func(*config)

type config struct {
	hold.Keeping
}

// keep makes a shared option one of this package.
func keep(o hold.KeepingOption) Option { return func(c *config) { o(&c.Keeping) } }

// WithWatchdogTimeout sets the lease of a leadership, which the watchdog
// renews every third of it. It bounds how long a crashed leader keeps
// the others from leading. d must be at least 30ms. The default is
// DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	return keep(hold.WatchdogTimeout("election", d))
}

// WithOnLost sets a function called once when the handle's leadership is
// lost rather than resigned: its lease ran out, someone forced it to
// resign, or renewals kept failing. It runs on the watchdog goroutine and
// must not block. The default is none; Done reports the loss either way.
func WithOnLost(f func(err error)) Option { return keep(hold.OnLost(f)) }

// grantLease is how long a candidate's place lives from its last refresh,
// and how long a grant of the leadership to it lasts.
func grantLease() time.Duration { return min(CandidateTimeout, hold.GrantLease) }

// maxSleep bounds every sleep of a waiting candidate: its attempts keep
// its deadline in line and its value, which last CandidateTimeout.
func (c *config) maxSleep() time.Duration { return min(CandidateTimeout/3, c.Lease()) }

func newConfig(opts []Option) config {
	cfg := config{Keeping: hold.Keeping{WatchdogTimeout: DefaultWatchdogTimeout}}
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
