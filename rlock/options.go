package rlock

import (
	"fmt"
	"time"
)

// DefaultWatchdogTimeout is the lease of a hold kept alive by the watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// Option configures a Mutex.
type Option func(*config)

type config struct {
	leaseTime       time.Duration
	watchdogTimeout time.Duration
	fencing         bool
	onLost          func(error)
	ackReplicas     int           // WithReplicaAck; 0: no acknowledgement
	ackTimeout      time.Duration // WithReplicaAck
}

// WithLeaseTime gives every hold a fixed lease of d instead of the
// watchdog: the lock frees itself d after the last Lock, whether or not the
// holder is still working, and a re-entry re-arms the lease to d. Done
// closes when the lease runs out. d must be positive. The default is no
// fixed lease: the watchdog keeps the hold alive.
func WithLeaseTime(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("rlock: WithLeaseTime(%v): lease must be positive", d))
	}
	return func(c *config) { c.leaseTime = d }
}

// WithWatchdogTimeout sets the lease of holds kept alive by the watchdog,
// which renews them every third of it. It bounds how long a crashed
// holder blocks others. d must be at least 30ms. The default is
// DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	if d < 30*time.Millisecond {
		panic(fmt.Sprintf("rlock: WithWatchdogTimeout(%v): timeout must be at least 30ms", d))
	}
	return func(c *config) { c.watchdogTimeout = d }
}

// WithFencing makes every first acquisition take the next value of a
// per-name counter that never expires; Token returns it. Tokens strictly
// increase across all handles and processes, so a resource that remembers
// the highest token it has seen can refuse a stale holder. The default is
// no fencing.
func WithFencing() Option {
	return func(c *config) { c.fencing = true }
}

// WithOnLost sets a function called once when a hold is lost rather than
// released: its lease ran out, someone force-unlocked it, or renewals kept
// failing. It runs on the watchdog goroutine and must not block. The
// default is none; Done reports the loss either way.
func WithOnLost(f func(err error)) Option {
	return func(c *config) { c.onLost = f }
}

func (c *config) lease() time.Duration {
	if c.leaseTime > 0 {
		return c.leaseTime
	}
	return c.watchdogTimeout
}
