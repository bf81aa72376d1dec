package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitFor polls cond every 10ms until it holds, failing the test if it
// does not within the given time. Tests use it instead of sleeping.
func WaitFor(t testing.TB, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// NumSub returns how many subscribers channel has on the server rdb talks
// to (PUBSUB NUMSUB; for shard channels use ShardNumSub).
func NumSub(t testing.TB, rdb redis.UniversalClient, channel string) int64 {
	t.Helper()
	m, err := rdb.PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatalf("redistest: PUBSUB NUMSUB: %v", err)
	}
	return m[channel]
}

// ShardNumSub returns how many subscribers shard channel has on the server
// rdb talks to (PUBSUB SHARDNUMSUB).
func ShardNumSub(t testing.TB, rdb *redis.Client, channel string) int64 {
	t.Helper()
	m, err := rdb.PubSubShardNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatalf("redistest: PUBSUB SHARDNUMSUB: %v", err)
	}
	return m[channel]
}
