package rlock_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Cluster tier: a real 3-master Redis Cluster.

// lockKey is the main key of the lock called name, whose slot is the lock's.
func lockKey(name string) string { return keyspace.NewNames(name).Lock() }

func TestClusterMutualExclusion(t *testing.T) {
	c := redistest.SharedCluster(t)
	var clients []redis.UniversalClient
	for range 4 {
		clients = append(clients, c.NewClient(t))
	}
	var wg sync.WaitGroup
	for _, name := range c.NamesOnEveryMaster(t, lockKey) {
		wg.Go(func() { counterRun(t, clients, name, 4, 25, false) })
	}
	wg.Wait()
}

func TestClusterWaiterOnShardChannel(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, name := range c.NamesOnEveryMaster(t, lockKey) {
		t.Run(name, func(t *testing.T) {
			n := keyspace.NewNames(name)
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

// 600 locks in about as many slots, one waiter each, all on one client:
// the client listens with one pub/sub connection per master, and every
// waiter acquires once the holder releases, woken by the release (the
// holder's 30s lease is far past the bound).
func TestClusterManyLocksOneConnectionPerPrimary(t *testing.T) {
	c := redistest.SharedCluster(t)
	clientName := "many-locks-" + redistest.UniqueName(t)
	waiters := c.NewClient(t, func(o *redis.ClusterOptions) { o.ClientName = clientName })
	holderRDB := c.NewClient(t)
	base := redistest.UniqueName(t)
	const n = 600
	holders := make([]*rlock.Mutex, n)
	for i := range holders {
		holders[i] = rlock.New(holderRDB, fmt.Sprintf("%s-%d", base, i))
		mustLock(t, holders[i])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	acquired := make(chan time.Time, n)
	for i := range n {
		wg.Go(func() {
			m := rlock.New(waiters, fmt.Sprintf("%s-%d", base, i))
			if err := m.Lock(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			acquired <- time.Now()
			if err := m.Unlock(context.Background()); err != nil {
				t.Errorf("waiter %d: Unlock: %v", i, err)
			}
		})
	}
	// Parked: every lock's channel is subscribed on its master.
	redistest.WaitFor(t, 15*time.Second, func() bool {
		return len(c.ShardChannelsWithPrefix(t, keyspace.Prefix+"{"+base+"-")) == n
	})
	for _, s := range c.Nodes() {
		if k := redistest.PubSubClientsNamed(t, s, clientName); k != 1 {
			t.Errorf("%d pub/sub connections on %s for %d waiters, want 1", k, s.Addr(), n)
		}
	}
	released := time.Now()
	for _, h := range holders {
		mustUnlock(t, h)
	}
	wg.Wait()
	close(acquired)
	last := released
	for at := range acquired {
		if at.After(last) {
			last = at
		}
	}
	if d := last.Sub(released); d > 5*time.Second {
		t.Errorf("the last of %d waiters acquired %v after the releases began", n, d)
	}
}
