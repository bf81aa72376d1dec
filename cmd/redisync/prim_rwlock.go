package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rwlock"
)

// The demo and bench take the rwlock's write side, the one that excludes
// everybody.
func init() {
	register(primitive{
		name:  "rwlock",
		order: 30,
		newMutex: func(rdb redis.UniversalClient, name string) mutex {
			return rwlock.New(rdb, name)
		},
		kind: kindRWLock,
		forceUnlock: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
			return rwlock.New(rdb, name).ForceUnlock(ctx)
		},
	})
}
