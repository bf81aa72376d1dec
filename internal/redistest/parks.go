package redistest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/observe"
)

// Parks counts, on the clients it is attached to, the blocking acquires
// that parked (observe.Acquire.Park) and how their waits ended. A test
// that must know its waiters are asleep before it acts waits for the
// count: a waiter parks only after its last attempt, and how many
// attempts that takes depends on whether another waiter of the client
// already had the channel subscribed. A test of a wake-up asserts how
// the waiter woke, which a loaded machine cannot change, rather than how
// fast.
type Parks struct {
	observe.Nop
	n, notified, other, attempts atomic.Int64
}

// CountParks attaches a Parks to each client; attach it before creating
// the handles that use them.
func CountParks(t testing.TB, clients ...redis.UniversalClient) *Parks {
	t.Helper()
	p := &Parks{}
	for _, c := range clients {
		if err := observe.Attach(c, p); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// N returns how many acquires have parked so far (once each, however
// often they sleep: see observe.Acquire.Park).
func (p *Parks) N() int64 { return p.n.Load() }

// Attempts returns how many attempts the acquires have made (acquire
// scripts run).
func (p *Parks) Attempts() int64 { return p.attempts.Load() }

// Notified returns how many waits ended with a notification.
func (p *Parks) Notified() int64 { return p.notified.Load() }

// Unnotified returns how many waits ended otherwise: a sleep's end, or a
// kick from the client's keeper.
func (p *Parks) Unnotified() int64 { return p.other.Load() }

// Acquire hears of blocking acquires only: the others never park.
func (p *Parks) Acquire(ctx context.Context, _ observe.Op, blocking bool) (context.Context, observe.Acquire) {
	if !blocking {
		return ctx, nil
	}
	return ctx, parkReport{p}
}

type parkReport struct{ p *Parks }

func (r parkReport) Attempt(observe.Outcome, error) { r.p.attempts.Add(1) }
func (r parkReport) Park()                          { r.p.n.Add(1) }
func (r parkReport) Wake(notified bool) {
	if notified {
		r.p.notified.Add(1)
	} else {
		r.p.other.Add(1)
	}
}
func (r parkReport) End(observe.Outcome, time.Duration, error) {}
