package rwlock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// env is a Redis deployment the integration scenarios run on: the shared
// standalone server or the shared 3-master cluster.
type env struct {
	// client returns a new client, closed when t ends.
	client func(t testing.TB) redis.UniversalClient
	// node returns a plain client of the node that stores the keys of the
	// lock called name.
	node func(t testing.TB, name string) *redis.Client
	// sharded tells whether channels are shard channels.
	sharded bool
}

// onBoth runs scenario on a real redis-server and on a real cluster.
func onBoth(t *testing.T, scenario func(t *testing.T, e env)) {
	t.Run("server", func(t *testing.T) {
		srv := redistest.SharedServer(t)
		scenario(t, env{
			client: func(t testing.TB) redis.UniversalClient { return srv.NewClient(t) },
			node:   func(t testing.TB, _ string) *redis.Client { return srv.NewClient(t) },
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		scenario(t, env{
			client: func(t testing.TB) redis.UniversalClient { return c.NewClient(t) },
			node: func(t testing.TB, name string) *redis.Client {
				return c.MasterFor(lockKey(name)).NewClient(t)
			},
			sharded: true,
		})
	})
}

// miniEnv is a miniredis, for scenarios that need no real server.
func miniEnv(t testing.TB) env {
	_, rdb := redistest.Mini(t)
	return env{
		client: func(testing.TB) redis.UniversalClient { return rdb },
		node:   func(testing.TB, string) *redis.Client { return rdb },
	}
}

func lockKey(name string) string { return keyspace.NewNames(name).Lock() }

// rwKeys are the keys of the lock called name.
func rwKeys(name string) script.RWKeys {
	return keyspace.NewNames(name).RWKeys()
}

// subscribers returns how many connections listen on the channel of the
// lock called name that channel picks: keyspace.Names.Channel wakes the
// readers, keyspace.Names.WriterChannel the writers.
func (e env) subscribers(t testing.TB, name string, channel func(keyspace.Names) string) int64 {
	t.Helper()
	ch := channel(keyspace.NewNames(name))
	node := e.node(t, name)
	if e.sharded {
		return redistest.ShardNumSub(t, node, ch)
	}
	return redistest.NumSub(t, node, ch)
}

// assertNoKeys fails when any key of the lock called name is left.
func (e env) assertNoKeys(t testing.TB, name string) {
	t.Helper()
	perclient.AwaitTidied(t.Context())
	keys, err := e.node(t, name).Keys(t.Context(), lockKey(name)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("keys left behind: %v", keys)
	}
}

// within fails unless d lies in [lo, hi].
func within(t testing.TB, what string, d, lo, hi time.Duration) {
	t.Helper()
	if d < lo || d > hi {
		t.Fatalf("%s after %v, want between %v and %v", what, d, lo, hi)
	}
}
