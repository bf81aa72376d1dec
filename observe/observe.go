// Package observe is the hook through which every redisync primitive
// reports what it does: acquires and their attempts, waits and wake-ups,
// holds and their losses, the watchdog's renewal batches and the pub/sub
// connections. An Observer attached to a Redis client with Attach hears
// of everything redisync does on that client. Package
// github.com/redisync/redisync/extra/redisyncotel is one: it turns the
// reports into OpenTelemetry metrics and spans.
//
// The hook is public, rather than an internal package that the
// instrumentation module imports by Go's path rule, because that module
// is versioned on its own: an internal API may change in any release of
// redisync, and an instrumentation built against another release would
// then break. Here the contract is written down and kept like any other
// API, and anyone may write an Observer of their own (for another metrics
// library, for logs, for tests) without depending on OpenTelemetry.
//
// The hook belongs to the client: Attach does no I/O, and affects the
// handles made before it too. The reports go out from the machinery every
// primitive shares (the hold engine, the wait loop, the watchdog, the
// pub/sub hub), so a lock built on the engine is observed without doing
// anything for it. When no Observer is attached anywhere, a report costs
// one atomic load and allocates nothing; on a client without one, when
// others have one, a map lookup under a read lock.
//
// Lifetime: the registry refers to a client weakly. Attaching an Observer
// does not keep the client reachable; once the client is garbage, its
// entry goes. The Observer must therefore not refer to the client itself.
package observe

import (
	"context"
	"time"
)

// Op names what a report is about: the primitive and the name its handle
// was given.
type Op struct {
	// Primitive is one of rlock, rwlock.read, rwlock.write, fairlock,
	// semaphore, leased, latch, multilock and election.
	Primitive string
	// Name is the name given to the primitive's New. Names are as many as
	// the application makes: an observer that turns them into metric
	// attributes should let its user choose to.
	Name string
}

// Outcome is how an acquire ended.
type Outcome int

const (
	// Acquired: the acquire, blocking or not, succeeded.
	Acquired Outcome = iota
	// Contended: an attempt, or a non-blocking acquire, found the lock
	// taken or too few permits available.
	Contended
	// Canceled: the caller's ctx ended first.
	Canceled
	// Failed: anything else, such as a Redis error.
	Failed
)

var outcomes = [...]string{Acquired: "acquired", Contended: "contended", Canceled: "canceled", Failed: "error"}

// String returns the outcome as instrumentation names it: acquired,
// contended, canceled or error.
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomes) {
		return "unknown"
	}
	return outcomes[o]
}

// Observer hears of what redisync does on one Redis client. Its methods
// are called from the goroutines of the callers, of the watchdog and of
// the pub/sub hub: they must be safe for concurrent use, and return
// quickly without blocking.
type Observer interface {
	// Acquire is called when an acquire begins: a blocking one (Lock,
	// RLock, Do, a semaphore's Acquire) or not (TryLock, TryAcquire). It
	// returns the ctx the acquire goes on with, which may carry values of
	// the observer's such as a span, and the Acquire that hears how it
	// goes, or nil to hear no more of it.
	Acquire(ctx context.Context, op Op, blocking bool) (context.Context, Acquire)
	// Held is called when a hold ends, released or lost, with how long it
	// lasted. Holds are what the engine keeps: locks and leased permits
	// kept alive by the watchdog; the permits of a counting semaphore
	// belong to nobody and are not holds.
	Held(op Op, d time.Duration)
	// Lost is called once for each hold that is lost rather than
	// released: when the hold's WithOnLost function would run.
	Lost(op Op)
	// Renewed is called after each batch of the watchdog's renewals.
	Renewed(r Renewal)
	// PubSub is called when a wake-up connection opens, closes, or comes
	// back after it broke.
	PubSub(e Event)
}

// Nop is an Observer that ignores every report. Embed it in an Observer
// of your own to write only the methods you need:
//
//	type lossLogger struct{ observe.Nop }
//
//	func (lossLogger) Lost(op observe.Op) { log.Printf("%s %q: hold lost", op.Primitive, op.Name) }
//
// An Observer that embeds Nop also keeps compiling when a later release
// adds a method to Observer: the new reports then go to Nop.
type Nop struct{}

var _ Observer = Nop{}

// Acquire returns ctx, and no Acquire: the acquire is not heard of further.
func (Nop) Acquire(ctx context.Context, _ Op, _ bool) (context.Context, Acquire) { return ctx, nil }

// Held does nothing.
func (Nop) Held(Op, time.Duration) {}

// Lost does nothing.
func (Nop) Lost(Op) {}

// Renewed does nothing.
func (Nop) Renewed(Renewal) {}

// PubSub does nothing.
func (Nop) PubSub(Event) {}

// Acquire hears how one acquire goes. The calls of one acquire come from
// one goroutine, in order, and End is the last.
type Acquire interface {
	// Attempt is called after each run of an acquire script, with its
	// outcome: Acquired, Contended, Canceled (cut short by ctx) or
	// Failed, and the error if any.
	Attempt(outcome Outcome, err error)
	// Park is called once, when a blocking acquire first has to wait: an
	// attempt was refused, or other goroutines of the handle are ahead of
	// it in line. A parked acquire stays parked until End.
	Park()
	// Wake is called when a parked acquire wakes up to try again:
	// notified by a release (notified true), or at the end of a sleep
	// bounded by the holder's lease or a poll interval.
	Wake(notified bool)
	// End is called when the acquire returns, with its outcome, how long
	// it took, and its error if any.
	End(outcome Outcome, d time.Duration, err error)
}

// Renewal is the outcome of one batch of the watchdog's renewals: how
// many holds it renewed, found lost (released or taken over by someone
// else), or could not renew for an error (they are retried), and how long
// the batch took.
type Renewal struct {
	OK, Lost, Failed int
	Duration         time.Duration
}

// Event is a change of a pub/sub connection.
type Event int

const (
	// ConnOpened: a wake-up connection opened.
	ConnOpened Event = iota
	// ConnClosed: a wake-up connection closed.
	ConnClosed
	// Reconnected: a broken wake-up connection is back.
	Reconnected
)
