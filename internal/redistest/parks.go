package redistest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/observe"
)

// Parks counts the blocking acquires that parked (observe.Acquire.Park) on
// the clients it is attached to. A test that must know its waiters are
// asleep before it acts waits for the count: a waiter parks only after its
// last attempt, and how many attempts that takes depends on whether
// another waiter of the client already had the channel subscribed.
type Parks struct {
	observe.Nop
	n atomic.Int64
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

// N returns how many acquires have parked so far.
func (p *Parks) N() int64 { return p.n.Load() }

// Acquire hears of blocking acquires only: the others never park.
func (p *Parks) Acquire(ctx context.Context, _ observe.Op, blocking bool) (context.Context, observe.Acquire) {
	if !blocking {
		return ctx, nil
	}
	return ctx, parkReport{p}
}

type parkReport struct{ p *Parks }

func (r parkReport) Attempt(observe.Outcome, error)            {}
func (r parkReport) Park()                                     { r.p.n.Add(1) }
func (r parkReport) Wake(bool)                                 {}
func (r parkReport) End(observe.Outcome, time.Duration, error) {}
