package nopubsub_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestClusterACLUser checks sharded pub/sub refused on a Redis Cluster:
// an ACL user without channels is answered NOPERM to SSUBSCRIBE, and its
// waiters poll; three clients share an rlock without overlap.
func TestClusterACLUser(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := bounded(t, 30*time.Second)
	for _, node := range c.Nodes() {
		admin := node.NewClient(t)
		if err := admin.Do(ctx, "ACL", "SETUSER", "nopubsub", "on", ">pw", "~*", "+@all", "-@pubsub", "resetchannels").Err(); err != nil {
			t.Fatal(err)
		}
	}
	name := redistest.UniqueName(t)
	var started, inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		rdb := c.NewClient(t, func(o *redis.ClusterOptions) { o.Username, o.Password = "nopubsub", "pw" })
		m := rlock.New(rdb, name)
		wg.Go(func() {
			for started.Add(1) <= 30 {
				if err := m.Lock(ctx); err != nil {
					t.Errorf("lock: %v", err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("unlock: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d critical sections overlapped another", n)
	}
}
