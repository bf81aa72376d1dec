package rwlock

import (
	"fmt"
	"time"
)

// DefaultWatchdogTimeout is the lease of a hold kept alive by the watchdog.
const DefaultWatchdogTimeout = 30 * time.Second

// WriterPatience is how long the announcement of a waiting writer holds new
// readers back unless the writer renews it. A waiting writer renews it with
// every attempt, at least every third of WriterPatience, so a writer that
// crashed while waiting blocks new readers for at most this long.
const WriterPatience = 2 * time.Second

// Option configures an RWMutex.
type Option func(*config)

type config struct {
	leaseTime       time.Duration
	watchdogTimeout time.Duration
	onLost          func(error)
}

// WithLeaseTime gives every hold a fixed lease of d instead of the
// watchdog: a read or write hold frees itself d after the handle's last
// RLock or Lock, whether or not the holder is still working, and a
// re-entry in either mode re-arms the lease of both to d. Done closes when
// the lease runs out. d must be positive. The default is no fixed lease:
// the watchdog keeps the holds alive.
func WithLeaseTime(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("rwlock: WithLeaseTime(%v): lease must be positive", d))
	}
	return func(c *config) { c.leaseTime = d }
}

// WithWatchdogTimeout sets the lease of holds kept alive by the watchdog,
// which renews them every third of it. It bounds how long a crashed
// holder, reader or writer, blocks others. d must be at least 30ms. The
// default is DefaultWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	if d < 30*time.Millisecond {
		panic(fmt.Sprintf("rwlock: WithWatchdogTimeout(%v): timeout must be at least 30ms", d))
	}
	return func(c *config) { c.watchdogTimeout = d }
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
