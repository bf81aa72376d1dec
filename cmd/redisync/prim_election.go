package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
)

// An election is no mutex for the demo or the benchmark; unlock --force
// forces its leader to resign.
func init() {
	register(primitive{
		name:  "election",
		order: 70,
		kind:  kindElection,
		forceUnlock: func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
			return election.New(rdb, name).ForceResign(ctx)
		},
	})
}
