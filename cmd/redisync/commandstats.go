package main

import (
	"context"
	"maps"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/cmdstats"
)

// notCounted are commands that are not the primitives' work: the
// measurement itself and connection handshakes.
var notCounted = map[string]bool{"info": true, "hello": true, "auth": true, "select": true, "client|setinfo": true, "client|setname": true}

// commandCalls returns the commands the server has run, summed over
// every master, from INFO commandstats, those in notCounted left out. ok
// is false when the server does not report them (miniredis).
func commandCalls(ctx context.Context, rdb redis.UniversalClient) (total cmdstats.Stats, ok bool) {
	var mu sync.Mutex // protects total, seen
	total = make(cmdstats.Stats)
	seen := false
	err := forEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		info, err := node.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		s, found := cmdstats.Parse(info)
		maps.DeleteFunc(s, func(name string, _ cmdstats.Stat) bool { return notCounted[name] })
		mu.Lock()
		total.Add(s)
		seen = seen || found
		mu.Unlock()
		return nil
	})
	return total, err == nil && seen
}
