package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
)

// The counting semaphore keeps the oversell demo's stock as its permits;
// with one permit it is a mutex for the benchmark.
func init() {
	register(primitive{
		name:  "semaphore",
		order: 40,
		newMutex: func(rdb redis.UniversalClient, name string) mutex {
			return semaphoreMutex{semaphore.New(rdb, name)}
		},
		prepare: func(ctx context.Context, rdb redis.UniversalClient, name string) error {
			return semaphore.New(rdb, name).SetPermits(ctx, 1)
		},
		stock: &stockKeeper{
			fill: func(ctx context.Context, rdb redis.UniversalClient, name string, n int) error {
				return semaphore.New(rdb, name).SetPermits(ctx, int64(n))
			},
			take: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
				return semaphore.New(rdb, name).TryAcquire(ctx, 1)
			},
		},
		kind: kindSemaphore,
	})
}

// semaphoreMutex is a one-permit semaphore used as a mutex.
type semaphoreMutex struct{ s *semaphore.Semaphore }

func (m semaphoreMutex) Lock(ctx context.Context) error   { return m.s.Acquire(ctx, 1) }
func (m semaphoreMutex) Unlock(ctx context.Context) error { return m.s.Release(ctx, 1) }
