package semaphore

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/exactly"
)

const (
	// DefaultWatchdogTimeout is the lease of a Leased permit acquired with
	// lease 0, which the watchdog keeps alive.
	DefaultWatchdogTimeout = 30 * time.Second

	// DefaultPollInterval bounds every sleep of a waiter. Waiters are woken
	// by notifications; the interval is the safety net for one that was
	// lost, or that another waiter took without being able to use it (see
	// the package doc), so that no waiter ever sleeps unbounded.
	DefaultPollInterval = time.Second
)

// receiptTTL is how long a semaphore remembers that a request run by
// exactly.Once changed its count, so that a resent request changes
// nothing: it lives that long past the request's deadline, after which no
// copy of it changes anything.
const receiptTTL = exactly.ReceiptTTL

// acquireReceiptTTL is the lifetime of an acquire receipt, which is kept
// until the request's outcome is known rather than trusted to expire after
// its last retry: a safety net only (see settled.go).
const acquireReceiptTTL = exactly.AcquireReceiptTTL

// cleanupTimeout bounds the calls that tidy up after a cancelled ctx.
const cleanupTimeout = time.Second

// Option configures a Semaphore or a Leased.
type Option func(*config)

// LeasedOption configures a Leased: an Option, or one that only a leased
// semaphore has (WithWatchdogTimeout, WithOnLost). A counting Semaphore's
// permits have no lease, so New does not accept those: an option it would
// ignore is a compile error instead.
type LeasedOption interface{ applyLeased(*config) }

func (o Option) applyLeased(c *config) { o(c) }

// leasedOption is an option of a Leased only.
type leasedOption func(*config)

func (o leasedOption) applyLeased(c *config) { o(c) }

type config struct {
	watchdogTimeout time.Duration
	pollInterval    time.Duration
	onLost          func(error)
	noPubSub        bool // WithoutPubSub
}

func newConfig(opts []Option) config {
	c := config{watchdogTimeout: DefaultWatchdogTimeout, pollInterval: DefaultPollInterval}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func newLeasedConfig(opts []LeasedOption) config {
	c := newConfig(nil)
	for _, o := range opts {
		o.applyLeased(&c)
	}
	return c
}

// WithWatchdogTimeout sets the lease of Leased permits acquired with lease
// 0: the watchdog renews them every third of it while the process lives,
// and a crashed process leaks them for at most that long. d must be at
// least 30ms. A counting Semaphore, whose permits have no lease, does not
// take it. The default is DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) LeasedOption {
	if d < 30*time.Millisecond {
		panic(fmt.Sprintf("semaphore: WithWatchdogTimeout(%v): timeout must be at least 30ms", d))
	}
	return leasedOption(func(c *config) { c.watchdogTimeout = d })
}

// WithPollInterval sets the longest a waiter sleeps before it tries again
// without having been notified. Shorter costs more Redis commands while
// waiting; longer delays a waiter whose notification was lost. d must be
// at least 10ms. The default is DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("semaphore: WithPollInterval(%v): interval must be at least 10ms", d))
	}
	return func(c *config) { c.pollInterval = d }
}

// WithOnLost sets a function called once when a Leased permit that the
// watchdog keeps alive (acquired with lease 0) is lost rather than
// released: its lease ran out, someone released it through another
// handle, or renewals kept failing. The error wraps ErrLost and names the
// permit id. It runs on the watchdog goroutine and must not block. A
// counting Semaphore does not take it. The default is none; Done(id)
// reports the loss either way.
func WithOnLost(f func(err error)) LeasedOption {
	return leasedOption(func(c *config) { c.onLost = f })
}

// WithoutPubSub makes every waiter on the handle's Redis client ask
// Redis whether it may proceed about every 25ms (jittered) instead of
// subscribing to release notifications: for a proxy without pub/sub (twemproxy) or an ACL
// user without channel rights, without first finding out that the server
// refuses subscriptions. It is a setting of the client, not of the
// handle: the waiters of every handle on one client share its subscriptions,
// so from New on every waiter on that client polls. The default is to
// subscribe, and to poll from the first subscription the server refuses.
func WithoutPubSub() Option { return func(c *config) { c.noPubSub = true } }
