package latch

import (
	"fmt"
	"time"
)

// DefaultPollInterval bounds every sleep of a waiter. Waiters are woken by
// the message of the step to zero; the interval is the safety net for a
// message that was lost, or a latch that reached zero without one, so
// that no waiter sleeps unbounded.
const DefaultPollInterval = time.Second

// Option configures a Latch.
type Option func(*config)

type config struct {
	pollInterval time.Duration
	noPubSub     bool // WithoutPubSub
}

func newConfig(opts []Option) config {
	c := config{pollInterval: DefaultPollInterval}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithPollInterval sets the longest a waiter sleeps before it reads the
// count again without having been woken. Shorter costs more Redis
// commands while waiting; longer delays a waiter whose wake-up was lost.
// d must be at least 10ms. The default is DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("latch: WithPollInterval(%v): interval must be at least 10ms", d))
	}
	return func(c *config) { c.pollInterval = d }
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
