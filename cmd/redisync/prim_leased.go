package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
)

// soldLease is the lease of a permit the oversell demo sells: the item is
// gone for good as far as the demo is concerned, which deletes its keys
// long before.
const soldLease = 5 * time.Minute

// The leased semaphore keeps the oversell demo's stock as its permits;
// with one permit, held with watchdog renewal (lease 0), it is a mutex for
// the benchmark.
func init() {
	register(primitive{
		name:  "leased",
		order: 50,
		newMutex: func(rdb redis.UniversalClient, name string) mutex {
			return &leasedMutex{l: semaphore.NewLeased(rdb, name)}
		},
		prepare: func(ctx context.Context, rdb redis.UniversalClient, name string) error {
			return semaphore.NewLeased(rdb, name).SetPermits(ctx, 1)
		},
		stock: &stockKeeper{
			fill: func(ctx context.Context, rdb redis.UniversalClient, name string, n int) error {
				return semaphore.NewLeased(rdb, name).SetPermits(ctx, int64(n))
			},
			take: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
				_, ok, err := semaphore.NewLeased(rdb, name).TryAcquire(ctx, soldLease)
				return ok, err
			},
		},
		kind: kindSemaphore,
	})
}

// leasedMutex is a one-permit leased semaphore used as a mutex by one
// worker at a time.
type leasedMutex struct {
	l  *semaphore.Leased
	id string // the permit held, if any
}

func (m *leasedMutex) Lock(ctx context.Context) error {
	id, err := m.l.Acquire(ctx, 0)
	if err == nil {
		m.id = id
	}
	return err
}

func (m *leasedMutex) Unlock(ctx context.Context) error { return m.l.Release(ctx, m.id) }
