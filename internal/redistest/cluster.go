package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterMasters is how many masters every cluster has.
	clusterMasters = 3
	clusterSlots   = 16384
	// clusterReadyTimeout bounds the wait for a freshly created cluster to
	// agree on its slot map.
	clusterReadyTimeout = 20 * time.Second
	// clusterCreateTimeout bounds redis-cli --cluster create.
	clusterCreateTimeout = 30 * time.Second
)

// Cluster is a real Redis (or Valkey) Cluster of three masters, without
// replicas (StartCluster) or with one replica each
// (StartClusterWithReplicas), each node a Server started with
// --cluster-enabled yes in its own directory.
type Cluster struct {
	nodes    []*Server
	replicas int // per master
}

// StartCluster starts a new three-master cluster, creates it with
// redis-cli (CLIBin) --cluster create and waits until every node reports
// cluster_state:ok and a CLUSTER SLOTS map covering all 16384 slots. All
// nodes are killed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startClusterT(t, 0)
}

// StartClusterWithReplicas is StartCluster for a cluster of three masters
// with one replica each (six nodes, --cluster-replicas 1). It also waits
// until every node's CLUSTER SLOTS names each master's replica and each
// replica's replication link is up, so that Failover can be used at once.
func StartClusterWithReplicas(t testing.TB) *Cluster {
	t.Helper()
	return startClusterT(t, 1)
}

func startClusterT(t testing.TB, replicas int) *Cluster {
	t.Helper()
	RequireCluster(t)
	c, err := startCluster(func() (string, error) { return t.TempDir(), nil }, false, replicas)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.close)
	return c
}

// LaunchCluster starts a cluster as StartCluster does (with one replica per
// master when replicas is set, as StartClusterWithReplicas does) for a
// program rather than a test, such as the benchmarks: the nodes live in
// temporary directories of their own, and the caller must Close the
// cluster. Unlike the test helpers it does not look for the binaries
// first: a missing one is an error.
func LaunchCluster(replicas bool) (*Cluster, error) {
	n := 0
	if replicas {
		n = 1
	}
	return startCluster(func() (string, error) { return os.MkdirTemp("", "redistest-cluster-") }, true, n)
}

// Close kills every node of a cluster from LaunchCluster and removes its
// directories. Clusters of the test helpers are closed by their test's
// cleanup; Close must not be called on them.
func (c *Cluster) Close() { c.close() }

func startCluster(mkdir func() (string, error), ownDir bool, replicas int) (_ *Cluster, err error) {
	c := &Cluster{replicas: replicas}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	var extra []string
	if replicas > 0 {
		extra = []string{
			// A replica's first full sync would otherwise wait five
			// seconds for more replicas to join the diskless transfer.
			"--repl-diskless-sync-delay", "0",
			// CLUSTER SLOTS lists a replica only once its replication
			// offset is above zero, which on an idle master takes its
			// first replication PING: ten seconds by default.
			"--repl-ping-replica-period", "1",
		}
	}
	for range clusterMasters * (1 + replicas) {
		dir, err := mkdir()
		if err != nil {
			return nil, err
		}
		s, err := startServer(dir, ownDir, true, extra)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.create(); err != nil {
		return nil, err
	}
	if err := c.waitReady(clusterReadyTimeout); err != nil {
		return nil, err
	}
	return c, nil
}

// create runs CLIBin --cluster create over all nodes.
func (c *Cluster) create() error {
	name := CLIBin()
	bin, err := exec.LookPath(name)
	if err != nil {
		return err
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	// The timeout context belongs to this call only, never to a test.
	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = time.Second
	// redis-cli (and valkey-cli) colours its --cluster output whenever TERM
	// contains "xterm", even when writing to a pipe; keep failure messages
	// free of escapes.
	cmd.Env = append(os.Environ(), "TERM=dumb")
	out, err := cmd.CombinedOutput()
	// Require both a zero exit status and the final coverage line.
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered") {
		return fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, c.allLogs())
	}
	return nil
}

// waitReady polls every node until it reports a healthy, complete view.
func (c *Cluster) waitReady(timeout time.Duration) error {
	if err := c.waitUntil(timeout, c.checkReady); err != nil {
		return fmt.Errorf("cluster %v not ready: %w", c.Addrs(), err)
	}
	return nil
}

// checkReady reports what keeps the cluster from being ready, or nil: every
// node reports cluster_state:ok, all slots assigned and all nodes known; its
// CLUSTER SLOTS covers every slot, names a master (by ROLE) for each range
// and, with replicas, exactly that master's replicas; every master has its
// replicas online and every replica its link to its master up.
func (c *Cluster) checkReady() error {
	roles := map[*Server]nodeRole{}
	if c.replicas > 0 {
		var err error
		if roles, err = c.roles(); err != nil {
			return err
		}
	}
	for _, s := range c.nodes {
		info, err := commandString(s.Addr(), opTimeout, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", s.Addr(), err)
		}
		for _, want := range []string{
			"cluster_state:ok",
			"cluster_slots_assigned:" + strconv.Itoa(clusterSlots),
			"cluster_known_nodes:" + strconv.Itoa(len(c.nodes)),
		} {
			name, value, _ := strings.Cut(want, ":")
			if got, _ := infoField(info, name); got != value {
				return fmt.Errorf("%s: %s is %q, want %q", s.Addr(), name, got, value)
			}
		}
		ranges, err := c.slotRanges(s)
		if err != nil {
			return err
		}
		slots := rangesToSlots(ranges)
		for slot, owner := range slots {
			if owner == nil {
				return fmt.Errorf("%s: CLUSTER SLOTS does not cover slot %d", s.Addr(), slot)
			}
		}
		if c.replicas == 0 {
			continue
		}
		for _, r := range ranges {
			if !roles[r.master].master {
				return fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d served by %s, whose ROLE is not master", s.Addr(), r.start, r.end, r.master.Addr())
			}
			if want := roles[r.master].replicas; !sameServers(r.replicas, want) {
				return fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d have replicas %v, but ROLE of %s names %v",
					s.Addr(), r.start, r.end, addrs(r.replicas), r.master.Addr(), addrs(want))
			}
		}
	}
	if c.replicas == 0 {
		return nil
	}
	masters := 0
	for _, s := range c.nodes {
		r := roles[s]
		switch {
		case r.master:
			masters++
			if len(r.replicas) != c.replicas {
				return fmt.Errorf("%s: ROLE lists %d online replicas %v, want %d", s.Addr(), len(r.replicas), addrs(r.replicas), c.replicas)
			}
		case r.of == nil || !roles[r.of].master:
			return fmt.Errorf("%s: a replica of %s, which is no master of the cluster", s.Addr(), r.ofAddr)
		case !r.linkUp:
			return fmt.Errorf("%s: replication link to %s is %q, not connected", s.Addr(), r.ofAddr, r.state)
		}
	}
	if masters != clusterMasters {
		return fmt.Errorf("%d nodes have ROLE master, want %d", masters, clusterMasters)
	}
	return nil
}

// slotRange is one entry of a CLUSTER SLOTS reply.
type slotRange struct {
	start, end int
	master     *Server
	replicas   []*Server
}

// slotRanges asks s for CLUSTER SLOTS and resolves every node it names to
// one of c.nodes. Nodes that are not nodes of c, or whose address is not yet
// known, are reported as errors.
func (c *Cluster) slotRanges(s *Server) ([]slotRange, error) {
	v, err := command(s.Addr(), opTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", s.Addr(), err)
	}
	entries, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: unexpected reply %T", s.Addr(), v)
	}
	ranges := make([]slotRange, 0, len(entries))
	for _, entry := range entries {
		e, ok := entry.([]any)
		if !ok || len(e) < 3 {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: bad entry %v", s.Addr(), entry)
		}
		start, ok1 := e[0].(int64)
		end, ok2 := e[1].(int64)
		if !ok1 || !ok2 || start < 0 || end >= clusterSlots || start > end {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: bad entry %v", s.Addr(), entry)
		}
		r := slotRange{start: int(start), end: int(end)}
		for i, n := range e[2:] {
			node, ok := n.([]any)
			if !ok || len(node) < 2 {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS: bad entry %v", s.Addr(), entry)
			}
			ip, _ := node[0].(string)
			port, _ := node[1].(int64)
			srv := c.nodeByAddr(ip, int(port))
			if srv == nil {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d served by unknown %q:%d", s.Addr(), start, end, ip, port)
			}
			if i == 0 {
				r.master = srv
			} else {
				r.replicas = append(r.replicas, srv)
			}
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// rangesToSlots maps every slot to its master (nil when uncovered).
func rangesToSlots(ranges []slotRange) []*Server {
	slots := make([]*Server, clusterSlots)
	for _, r := range ranges {
		for slot := r.start; slot <= r.end; slot++ {
			slots[slot] = r.master
		}
	}
	return slots
}

// slotMap asks s for CLUSTER SLOTS and maps every slot to its master among
// c.nodes (nil when uncovered).
func (c *Cluster) slotMap(s *Server) ([]*Server, error) {
	ranges, err := c.slotRanges(s)
	if err != nil {
		return nil, err
	}
	return rangesToSlots(ranges), nil
}

func (c *Cluster) nodeByAddr(ip string, port int) *Server {
	if ip != "127.0.0.1" {
		return nil
	}
	for _, s := range c.nodes {
		if s.port == port {
			return s
		}
	}
	return nil
}

func (c *Cluster) allLogs() string {
	var b strings.Builder
	for _, s := range c.nodes {
		b.WriteString(s.logs(0, 0))
	}
	return b.String()
}

// WaitReady waits (up to 20s) until every node reports cluster_state:ok, knows
// all nodes and serves a complete CLUSTER SLOTS map, e.g. after a node was
// restarted with Server.Restart. It fails t otherwise.
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	if err := c.waitReady(clusterReadyTimeout); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// Addrs returns the "127.0.0.1:<port>" addresses of all nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Nodes returns all the cluster's nodes, masters and replicas (see Masters
// and ReplicaOf for which is which), in the order they were started; for a
// cluster without replicas they are all masters.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// NewClient returns a go-redis cluster client seeded with all node
// addresses, closed when t ends. mod functions may adjust the options.
func (c *Cluster) NewClient(t testing.TB, mod ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	opt := &redis.ClusterOptions{Addrs: c.Addrs()}
	for _, f := range mod {
		f(opt)
	}
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// MasterFor returns the node that currently serves key's hash slot, as
// reported by CLUSTER KEYSLOT and CLUSTER SLOTS on the first reachable node.
// It panics when no node answers, since it has no test to fail.
func (c *Cluster) MasterFor(key string) *Server {
	s, err := c.masterFor(key)
	if err != nil {
		panic(fmt.Sprintf("redistest: MasterFor(%q): %v", key, err))
	}
	return s
}

func (c *Cluster) masterFor(key string) (*Server, error) {
	slot, err := c.slotOf(key)
	if err != nil {
		return nil, err
	}
	return c.ownerOf(slot)
}

// ownerOf returns the master of slot as the first node that answers sees it.
func (c *Cluster) ownerOf(slot int) (*Server, error) {
	var errs []error
	for _, s := range c.nodes {
		slots, err := c.slotMap(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if slots[slot] == nil {
			return nil, fmt.Errorf("%s: slot %d is not served", s.Addr(), slot)
		}
		return slots[slot], nil
	}
	if len(errs) == 0 {
		return nil, errors.New("cluster has no node")
	}
	return nil, errors.Join(errs...)
}

// ShardNumSub returns how many subscribers shard channel has on the master
// that serves its slot (PUBSUB SHARDNUMSUB there), for tests that check
// that waiters subscribed or left.
func (c *Cluster) ShardNumSub(t testing.TB, channel string) int64 {
	t.Helper()
	s, err := c.masterFor(channel)
	if err == nil {
		var v any
		if v, err = command(s.Addr(), opTimeout, "PUBSUB", "SHARDNUMSUB", channel); err == nil {
			if r, ok := v.([]any); ok && len(r) == 2 {
				if n, ok := r[1].(int64); ok {
					return n
				}
			}
			err = fmt.Errorf("unexpected reply %v", v)
		}
	}
	t.Fatalf("redistest: PUBSUB SHARDNUMSUB %s: %v", channel, err)
	return 0
}

// Flush runs FLUSHALL on every node whose ROLE is master. It fails t when a
// node does not answer.
func (c *Cluster) Flush(t testing.TB) {
	t.Helper()
	for _, s := range c.nodes {
		role, err := command(s.Addr(), opTimeout, "ROLE")
		if err != nil {
			t.Fatalf("redistest: ROLE on %s: %v", s.Addr(), err)
		}
		if r, ok := role.([]any); !ok || len(r) == 0 || r[0] != "master" {
			continue
		}
		if _, err := command(s.Addr(), opTimeout, "FLUSHALL"); err != nil {
			t.Fatalf("redistest: FLUSHALL on %s: %v", s.Addr(), err)
		}
	}
}

func (c *Cluster) close() {
	for _, s := range c.nodes {
		s.close()
	}
}
