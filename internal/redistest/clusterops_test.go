package redistest_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// TestClusterWithReplicas walks one key-filled slot through a migration in
// two steps and through two failovers, checking what a shard channel
// subscriber leaves on the nodes on the way.
func TestClusterWithReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node cluster")
	}
	start := time.Now()
	c := redistest.StartClusterWithReplicas(t)
	t.Logf("cluster %v ready in %v", c.Addrs(), time.Since(start))

	masters := c.Masters(t)
	if len(c.Nodes()) != 6 || len(masters) != 3 {
		t.Fatalf("Nodes=%d Masters=%d, want 6 and 3", len(c.Nodes()), len(masters))
	}
	seen := map[*redistest.Server]bool{}
	for _, m := range masters {
		r := c.ReplicaOf(t, m)
		if seen[r] || slices.Contains(masters, r) {
			t.Fatalf("ReplicaOf(%s) = %s, a master or another master's replica", m.Addr(), r.Addr())
		}
		seen[r] = true
	}
	ids := map[string]bool{}
	for _, s := range c.Nodes() {
		id := c.NodeID(t, s)
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(id) || ids[id] {
			t.Fatalf("NodeID(%s) = %q: not 40 hex digits, or not unique", s.Addr(), id)
		}
		ids[id] = true
	}

	rdb := c.NewClient(t)
	tag := "{" + redistest.UniqueName(t) + "}"
	slot := c.SlotOf(tag + "k")
	if want, err := rdb.ClusterKeySlot(ctx(t), tag+"k").Result(); err != nil || int64(slot) != want {
		t.Fatalf("SlotOf = %d, CLUSTER KEYSLOT via go-redis = %d, %v", slot, want, err)
	}
	src := c.MasterFor(tag + "k")
	// More keys than one MIGRATE batch moves.
	const keys = 150
	for i := range keys {
		if err := rdb.Set(ctx(t), fmt.Sprintf("%sk%d", tag, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	channel := tag + "ch"
	ps := rdb.SSubscribe(ctx(t), channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		want, wantChannels := 0, []string{}
		if m == src {
			want, wantChannels = 1, []string{channel}
		}
		if n, chs := redistest.PubSubClients(t, m), redistest.ShardChannels(t, m); n != want || !slices.Equal(chs, wantChannels) {
			t.Fatalf("%s: PubSubClients=%d ShardChannels=%q, want %d and %q", m.Addr(), n, chs, want, wantChannels)
		}
	}

	dst := masters[0]
	if dst == src {
		dst = masters[1]
	}
	m := c.BeginMigration(t, slot, dst)
	if m.Source() != src || m.Target() != dst || m.Slot() != slot {
		t.Fatalf("Migration of %d from %v to %v", m.Slot(), m.Source().Addr(), m.Target().Addr())
	}
	// Halfway: the source sends a key it does not have to the target.
	direct := src.NewClient(t)
	if err := direct.Get(ctx(t), tag+"missing").Err(); err == nil || !strings.HasPrefix(err.Error(), "ASK ") {
		t.Fatalf("GET of a missing key on the migrating source: %v, want an ASK redirection", err)
	}
	if n := m.MoveKeys(t); n != keys {
		t.Fatalf("MoveKeys moved %d keys, want %d", n, keys)
	}
	m.Finish(t)
	if got := c.MasterFor(tag + "k"); got != dst {
		t.Fatalf("after the migration slot %d is on %s, want %s", slot, got.Addr(), dst.Addr())
	}
	if got, err := dst.NewClient(t).Get(ctx(t), tag+"k7").Result(); err != nil || got != "7" {
		t.Fatalf("GET %sk7 on the target = %q, %v", tag, got, err)
	}
	// Losing the slot, the source unsubscribed its shard channel, and the
	// connection, still open, is no longer of type pubsub.
	redistest.WaitFor(t, 5*time.Second, func() bool {
		return len(redistest.ShardChannels(t, src)) == 0 && redistest.PubSubClients(t, src) == 0
	})
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	promoted := c.Failover(t, dst)
	t.Logf("failover of %s to %s in %v", dst.Addr(), promoted.Addr(), time.Since(start))
	if promoted == dst || c.MasterFor(tag+"k") != promoted || c.ReplicaOf(t, promoted) != dst {
		t.Fatalf("after Failover(%s) = %s: slot on %s, replica of the new master %s",
			dst.Addr(), promoted.Addr(), c.MasterFor(tag+"k").Addr(), c.ReplicaOf(t, promoted).Addr())
	}
	if got, err := promoted.NewClient(t).Get(ctx(t), tag+"k7").Result(); err != nil || got != "7" {
		t.Fatalf("GET %sk7 on the promoted replica = %q, %v", tag, got, err)
	}
	if back := c.Failover(t, promoted); back != dst || c.MasterFor(tag+"k") != dst {
		t.Fatalf("failing back gave %s, want %s", back.Addr(), dst.Addr())
	}
	c.WaitReady(t)
	c.Flush(t)
	if n, err := rdb.Exists(ctx(t), tag+"k7").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after Flush = %d, %v", n, err)
	}
}

// TestClusterMigrateWithoutReplicas moves a slot of the shared cluster away
// and back, and checks what the replica helpers say of a cluster without
// replicas.
func TestClusterMigrateWithoutReplicas(t *testing.T) {
	c := redistest.SharedCluster(t)
	masters := c.Masters(t)
	if !slices.Equal(masters, c.Nodes()) {
		t.Fatalf("Masters = %d nodes, want all %d", len(masters), len(c.Nodes()))
	}
	ft := (&fakeTB{TB: t}).run(func(tb testing.TB) { c.ReplicaOf(tb, masters[0]) })
	if !strings.Contains(ft.msg, "is a replica of "+masters[0].Addr()) {
		t.Fatalf("ReplicaOf without replicas: %q", ft.msg)
	}

	rdb := c.NewClient(t)
	key := "{" + redistest.UniqueName(t) + "}"
	if err := rdb.Set(ctx(t), key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot, src := c.SlotOf(key), c.MasterFor(key)
	dst := masters[0]
	if dst == src {
		dst = masters[1]
	}
	c.MigrateSlot(t, slot, dst)
	if c.MasterFor(key) != dst {
		t.Fatalf("slot %d not on %s after MigrateSlot", slot, dst.Addr())
	}
	if got, err := rdb.Get(ctx(t), key).Result(); err != nil || got != "v" {
		t.Fatalf("GET %s after MigrateSlot = %q, %v", key, got, err)
	}
	ft = (&fakeTB{TB: t}).run(func(tb testing.TB) { c.MigrateSlot(tb, slot, dst) })
	if !strings.Contains(ft.msg, "already served by") {
		t.Fatalf("MigrateSlot to the owner: %q", ft.msg)
	}
	c.MigrateSlot(t, slot, src)
	if err := rdb.Del(ctx(t), key).Err(); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
}
