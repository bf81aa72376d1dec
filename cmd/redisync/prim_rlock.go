package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
)

func init() {
	register(primitive{
		name:  "rlock",
		order: 10,
		newMutex: func(rdb redis.UniversalClient, name string) mutex {
			return rlock.New(rdb, name)
		},
		kind: kindMutex,
		forceUnlock: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
			return rlock.New(rdb, name).ForceUnlock(ctx)
		},
	})
}
