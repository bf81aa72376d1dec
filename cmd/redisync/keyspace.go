package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
)

// scanCount is the COUNT hint of every SCAN the tool sends.
const scanCount = 1000

// runPrefix returns a fresh key prefix for one demo or bench run, such as
// "redisync-demo-3f9a0c12:". Everything the run creates is named under it:
// its own keys start with it, and its locks' keys with
// "redisync:{" + prefix, so cleanup can find both with SCAN.
func runPrefix(tool string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "redisync-" + tool + "-" + hex.EncodeToString(b[:]) + ":"
}

// runPatterns returns the SCAN patterns that match every key of a run.
func runPatterns(prefix string) []string {
	p := globEscape(prefix)
	return []string{p + "*", globEscape(keyspace.Prefix+"{") + p + "*"}
}

// globEscape escapes the characters SCAN MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// forEachNode calls fn for every node holding data: each master of a
// cluster, or the server itself.
func forEachNode(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node redis.UniversalClient) error) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return fn(ctx, node)
		})
	}
	return fn(ctx, rdb)
}

// nodeFor returns the client of the node holding key: its master on a
// cluster, rdb itself otherwise.
func nodeFor(ctx context.Context, rdb redis.UniversalClient, key string) (redis.UniversalClient, error) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, key)
	}
	return rdb, nil
}

// scanNode returns every key of one node matching pattern.
func scanNode(ctx context.Context, node redis.UniversalClient, pattern string) ([]string, error) {
	var keys []string
	iter := node.Scan(ctx, 0, pattern, scanCount).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// scanAll returns every key matching any of patterns, on every node.
func scanAll(ctx context.Context, rdb redis.UniversalClient, patterns ...string) ([]string, error) {
	var mu sync.Mutex // protects keys
	var keys []string
	err := forEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		for _, p := range patterns {
			found, err := scanNode(ctx, node, p)
			if err != nil {
				return err
			}
			mu.Lock()
			keys = append(keys, found...)
			mu.Unlock()
		}
		return nil
	})
	return keys, err
}

// deleteAll deletes every key matching any of patterns, on every node,
// one key per command so that no command spans two cluster slots. It
// returns how many keys it deleted.
func deleteAll(ctx context.Context, rdb redis.UniversalClient, patterns ...string) (int, error) {
	var mu sync.Mutex // protects n
	n := 0
	err := forEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		for _, p := range patterns {
			keys, err := scanNode(ctx, node, p)
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				continue
			}
			pipe := node.Pipeline()
			for _, k := range keys {
				pipe.Del(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			mu.Lock()
			n += len(keys)
			mu.Unlock()
		}
		return nil
	})
	return n, err
}

// cleanupRun deletes every key of the run under prefix. It runs even when
// ctx was cancelled (ctrl-C), bounded by cleanupTimeout.
func cleanupRun(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := deleteAll(ctx, rdb, runPatterns(prefix)...); err != nil {
		return fmt.Errorf("delete the keys under %q: %w", prefix, err)
	}
	return nil
}
