package nopubsub_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// mutex is what the contention tests need of a primitive.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// leased is a leased semaphore of one permit used as a mutex.
type leased struct {
	l  *semaphore.Leased
	id string
}

func (m *leased) Lock(ctx context.Context) (err error) {
	m.id, err = m.l.Acquire(ctx, 0)
	return err
}

func (m *leased) Unlock(ctx context.Context) error { return m.l.Release(ctx, m.id) }

// mutexes are the primitives of the acceptance test, each made on a
// client with default options.
var mutexes = []struct {
	name string
	make func(t *testing.T, rdb *redis.Client, name string) mutex
}{
	{"rlock", func(t *testing.T, rdb *redis.Client, name string) mutex { return rlock.New(rdb, name) }},
	{"fairlock", func(t *testing.T, rdb *redis.Client, name string) mutex { return fairlock.New(rdb, name) }},
	{"leased", func(t *testing.T, rdb *redis.Client, name string) mutex {
		l := semaphore.NewLeased(rdb, name)
		if _, err := l.TrySetPermits(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		return &leased{l: l}
	}},
}

// sectionsEach is how many critical sections each primitive serves: 300
// in all over the three.
const sectionsEach = 100

// TestContention has three clients (as three processes would) contend
// for an rlock, a fairlock and a leased semaphore of one permit, with
// default options, where subscriptions are refused: the waiters find
// that out and poll; the 300 critical sections complete, no two overlap,
// and no release fails.
func TestContention(t *testing.T) {
	deployments(t, func(t *testing.T, d deployment) {
		clients := []*redis.Client{d.client(t), d.client(t), d.client(t)}
		for _, p := range mutexes {
			t.Run(p.name, func(t *testing.T) {
				ctx := bounded(t, 30*time.Second)
				name := redistest.UniqueName(t)
				var started, inside, overlaps atomic.Int64
				var wg sync.WaitGroup
				for _, rdb := range clients {
					m := p.make(t, rdb, name)
					wg.Go(func() {
						for started.Add(1) <= sectionsEach {
							if err := m.Lock(ctx); err != nil {
								t.Errorf("lock: %v", err)
								return
							}
							if inside.Add(1) != 1 {
								overlaps.Add(1)
							}
							inside.Add(-1)
							if err := m.Unlock(ctx); err != nil {
								t.Errorf("unlock: %v", err)
								return
							}
						}
					})
				}
				wg.Wait()
				if n := overlaps.Load(); n > 0 {
					t.Fatalf("%d critical sections overlapped another", n)
				}
			})
		}
	})
}

// TestHandoffWithinTwoPolls checks that a waiter that polls holds within
// two poll intervals of the holder's release: the release grants it the
// lock (or frees the permit) in Redis, and its next ask, at most one
// jittered interval later, finds it so. The median of five handoffs is
// held to it; a single one may run late on a loaded machine, so each is
// only logged.
func TestHandoffWithinTwoPolls(t *testing.T) {
	deployments(t, func(t *testing.T, d deployment) {
		holderRDB, waiterRDB := d.client(t), d.client(t)
		traffic := redistest.CountTraffic(waiterRDB)
		for _, p := range mutexes {
			t.Run(p.name, func(t *testing.T) {
				ctx := bounded(t, 20*time.Second)
				name := redistest.UniqueName(t)
				holder, waiter := p.make(t, holderRDB, name), p.make(t, waiterRDB, name)
				var handoffs []time.Duration
				for range 5 {
					if err := holder.Lock(ctx); err != nil {
						t.Fatal(err)
					}
					asked := traffic.Commands()
					got := make(chan time.Time, 1)
					go func() {
						if err := waiter.Lock(ctx); err != nil {
							t.Error(err)
						}
						got <- time.Now()
					}()
					// Parked: it has asked Redis a few times and been refused.
					redistest.WaitFor(t, 5*time.Second, func() bool { return traffic.Commands() >= asked+3 })
					if err := holder.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					released := time.Now()
					handoffs = append(handoffs, (<-got).Sub(released))
					if err := waiter.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(handoffs)
				t.Logf("handoffs %v (poll interval %v)", handoffs, hub.PollInterval)
				if median := handoffs[len(handoffs)/2]; median > 2*hub.PollInterval {
					t.Fatalf("median handoff %v, want at most two poll intervals (%v)", median, 2*hub.PollInterval)
				}
			})
		}
	})
}
