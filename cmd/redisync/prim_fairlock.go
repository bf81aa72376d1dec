package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
)

func init() {
	register(primitive{
		name:  "fairlock",
		order: 20,
		newMutex: func(rdb redis.UniversalClient, name string) mutex {
			return fairlock.New(rdb, name)
		},
		kind: kindFairlock,
		forceUnlock: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
			return fairlock.New(rdb, name).ForceUnlock(ctx)
		},
	})
}
