package hub_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/keyslot"
	"github.com/redisync/redisync/internal/redistest"
)

// namedClusterClient returns a cluster client whose connections carry a
// name of their own, so that CLIENT LIST on the shared cluster tells this
// test's connections from everyone else's.
func namedClusterClient(t *testing.T, c *redistest.Cluster) (*redis.ClusterClient, string) {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-").Replace("hub-" + t.Name())
	return c.NewClient(t, func(o *redis.ClusterOptions) { o.ClientName = name }), name
}

// pubsubConns counts the pub/sub connections named name on each node.
func pubsubConns(t *testing.T, c *redistest.Cluster, name string) map[string]int {
	t.Helper()
	out := make(map[string]int)
	for _, s := range c.Nodes() {
		out[s.Addr()] = redistest.PubSubClientsNamed(t, s, name)
	}
	return out
}

// Channels in hundreds of slots share one connection per primary, each
// message wakes its own waiter, and nothing is left once they leave.
func TestClusterOneConnectionPerPrimary(t *testing.T) {
	c := redistest.SharedCluster(t)
	rdb, name := namedClusterClient(t, c)
	h := hub.New(rdb, true)
	prefix := redistest.UniqueName(t) + ":"
	const n = 600
	subs := make([]*hub.Subscription, n)
	slots := make(map[int]bool)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		ch := fmt.Sprintf("%s%d", prefix, i)
		slots[keyslot.Of(ch)] = true
		wg.Go(func() {
			s, err := h.Subscribe(t.Context(), ch)
			if err != nil {
				errs <- fmt.Errorf("Subscribe(%s): %w", ch, err)
				return
			}
			subs[i] = s
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	if len(slots) < 500 {
		t.Fatalf("test channels cover only %d slots", len(slots))
	}
	for addr, k := range pubsubConns(t, c, name) {
		if k != 1 {
			t.Errorf("%d pub/sub connections on %s, want 1", k, addr)
		}
	}
	for i := range n {
		if err := rdb.SPublish(t.Context(), fmt.Sprintf("%s%d", prefix, i), "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range subs {
		select {
		case <-s.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not woken by its message", i)
		}
	}
	for _, s := range subs {
		s.Close()
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return len(c.ShardChannelsWithPrefix(t, prefix)) == 0 })
	redistest.WaitFor(t, 5*time.Second, func() bool {
		for _, k := range pubsubConns(t, c, name) {
			if k != 0 {
				return false
			}
		}
		return true
	})
}

// A killed pub/sub connection is replaced and every channel subscribed
// again, slot by slot, on the same connection; the waiters are woken.
func TestClusterReconnectResubscribesEverySlot(t *testing.T) {
	c := redistest.SharedCluster(t)
	rdb, name := namedClusterClient(t, c)
	h := hub.New(rdb, true)
	prefix := redistest.UniqueName(t) + ":"
	const n = 60
	var subs []*hub.Subscription
	for i := range n {
		s, err := h.Subscribe(t.Context(), fmt.Sprintf("%s%d", prefix, i))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	for _, s := range c.Nodes() {
		admin := s.NewClient(t)
		if err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		_ = admin.Close()
	}
	for i, s := range subs {
		select {
		case <-s.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not woken by the reconnection", i)
		}
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return len(c.ShardChannelsWithPrefix(t, prefix)) == n })
	for addr, k := range pubsubConns(t, c, name) {
		if k != 1 {
			t.Errorf("%d pub/sub connections on %s after the reconnection, want 1", k, addr)
		}
	}
	// Once a channel is confirmed again (a second Subscribe returns then),
	// its waiter's wake-ups are drained and a message must reach it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for i, s := range subs {
		ch := fmt.Sprintf("%s%d", prefix, i)
		again, err := h.Subscribe(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
		select {
		case <-s.C():
		default:
		}
		if err := rdb.SPublish(ctx, ch, "1").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.C():
		case <-ctx.Done():
			t.Fatalf("waiter %d not woken by its message after the reconnection", i)
		}
	}
}
