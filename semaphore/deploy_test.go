package semaphore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// deployment is a real Redis the integration tests run against: the shared
// standalone server or the shared 3-master cluster.
type deployment struct {
	cluster bool
	// newClient returns a new client: a process of its own, as far as
	// redisync is concerned.
	newClient func(t *testing.T) redis.UniversalClient
	// subscribers returns how many connections subscribe to the
	// semaphore's notification channel.
	subscribers func(t *testing.T, name string) int64
	// admin is a client for the checks of the tests themselves.
	admin redis.UniversalClient
}

// eachDeployment runs f as a subtest on the standalone server and on the
// cluster.
func eachDeployment(t *testing.T, f func(t *testing.T, d deployment)) {
	t.Run("server", func(t *testing.T) {
		srv := redistest.SharedServer(t)
		admin := srv.NewClient(t)
		f(t, deployment{
			newClient: func(t *testing.T) redis.UniversalClient { return srv.NewClient(t) },
			subscribers: func(t *testing.T, name string) int64 {
				return redistest.NumSub(t, admin, channel(name))
			},
			admin: admin,
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		var mu sync.Mutex
		direct := map[string]*redis.Client{} // by channel: a client of the master serving it
		f(t, deployment{
			cluster:   true,
			newClient: func(t *testing.T) redis.UniversalClient { return c.NewClient(t) },
			subscribers: func(t *testing.T, name string) int64 {
				ch := channel(name)
				mu.Lock()
				rdb := direct[ch]
				if rdb == nil {
					rdb = c.MasterFor(ch).NewClient(t)
					direct[ch] = rdb
				}
				mu.Unlock()
				return redistest.ShardNumSub(t, rdb, ch)
			},
			admin: c.NewClient(t),
		})
	})
}

func channel(name string) string { return keyspace.NewNames(name).Channel() }

// commandCalls returns how many commands the server(s) behind rdb have run,
// in total and as scripts (EVALSHA and EVAL), from INFO commandstats.
// Commands run by scripts count in the total.
func commandCalls(t testing.TB, rdb redis.UniversalClient) (total, scripts int64) {
	t.Helper()
	ctx := context.Background()
	add := func(info string) {
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || !strings.HasPrefix(name, "cmdstat_") {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			total += n
			if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
				scripts += n
			}
		}
	}
	var mu sync.Mutex
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			info, err := m.Info(ctx, "commandstats").Result()
			mu.Lock()
			add(info)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return total, scripts
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	add(info)
	return total, scripts
}
