package election_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// keysOf returns every key of the primitive called name, on every master
// of a cluster.
func keysOf(t testing.TB, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	return redistest.Keys(t, rdb, keyspace.NewNames(name).Lock()+"*")
}

// assertNoKeys fails t if any key of the election but its fencing counter
// is left in Redis, or the counter has no expiry.
func assertNoKeys(t testing.TB, rdb redis.UniversalClient, name string) {
	t.Helper()
	n := keyspace.NewNames(name)
	for _, k := range keysOf(t, rdb, name) {
		if k != n.Fence() {
			t.Fatalf("key %q left behind", k)
		}
		if rdb.PTTL(context.Background(), k).Val() == -1 {
			t.Fatalf("fencing counter %q left without an expiry", k)
		}
	}
}

// dump returns what the keys of the name hold, for a test that checks
// nothing changed.
func dump(t testing.TB, rdb redis.UniversalClient, name string) string {
	t.Helper()
	ctx := context.Background()
	var out string
	for _, k := range keysOf(t, rdb, name) {
		var v any
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		default:
			v = typ
		}
		out += fmt.Sprintf("%s=%v ", k, v)
	}
	return out
}
