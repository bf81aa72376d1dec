package rlock_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Cluster tier: a real 3-master Redis Cluster.

// namesOnEveryMaster returns one lock name per master of c.
func namesOnEveryMaster(t *testing.T, c *redistest.Cluster) []string {
	t.Helper()
	base := redistest.UniqueName(t)
	seen := map[string]bool{}
	var names []string
	for i := 0; len(names) < len(c.Nodes()) && i < 1000; i++ {
		name := fmt.Sprintf("%s-%d", base, i)
		addr := c.MasterFor(internal.NewNames(name).Lock()).Addr()
		if !seen[addr] {
			seen[addr] = true
			names = append(names, name)
		}
	}
	if len(names) < len(c.Nodes()) {
		t.Fatalf("found names on only %d masters", len(names))
	}
	return names
}

func TestClusterMutualExclusion(t *testing.T) {
	c := redistest.SharedCluster(t)
	var clients []redis.UniversalClient
	for range 4 {
		clients = append(clients, c.NewClient(t))
	}
	var wg sync.WaitGroup
	for _, name := range namesOnEveryMaster(t, c) {
		wg.Go(func() { counterRun(t, clients, name, 4, 25) })
	}
	wg.Wait()
}

func TestClusterWaiterOnShardChannel(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, name := range namesOnEveryMaster(t, c) {
		t.Run(name, func(t *testing.T) {
			n := internal.NewNames(name)
			master := c.MasterFor(n.Lock()).NewClient(t)
			holder := rlock.New(c.NewClient(t), name)
			mustLock(t, holder)
			waiter := rlock.New(c.NewClient(t), name)
			got := make(chan error, 1)
			go func() { got <- waiter.Lock(t.Context()) }()
			var ch string // the waiter's own channel, named by its place in line
			redistest.WaitFor(t, 5*time.Second, func() bool {
				q := master.LRange(t.Context(), n.Queue(), 0, -1).Val()
				if len(q) == 1 {
					ch = n.WaiterChannel(q[0])
				}
				return ch != ""
			})
			shardSubscribed := func() bool {
				chans, err := master.PubSubShardChannels(t.Context(), "*").Result()
				return err == nil && slices.Contains(chans, ch)
			}
			redistest.WaitFor(t, 5*time.Second, shardSubscribed)

			// Kill the waiter's pub/sub connection: it comes back on the
			// same shard channel.
			if err := master.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
				t.Fatal(err)
			}
			redistest.WaitFor(t, 5*time.Second, shardSubscribed)

			start := time.Now()
			mustUnlock(t, holder)
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("waiter did not acquire after Unlock")
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("waiter acquired %v after Unlock, want a grant, not a lease timeout", d)
			}
			mustUnlock(t, waiter)
		})
	}
}
