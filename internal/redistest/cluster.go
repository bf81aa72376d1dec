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
	clusterNodes = 3
	clusterSlots = 16384
	// clusterReadyTimeout bounds the wait for a freshly created cluster to
	// agree on its slot map.
	clusterReadyTimeout = 20 * time.Second
	// clusterCreateTimeout bounds redis-cli --cluster create.
	clusterCreateTimeout = 30 * time.Second
)

// Cluster is a real Redis (or Valkey) Cluster of three masters (no replicas), each a
// Server started with --cluster-enabled yes in its own directory.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts a new three-master cluster, creates it with
// redis-cli (CLIBin) --cluster create and waits until every node reports
// cluster_state:ok and a CLUSTER SLOTS map covering all 16384 slots. All
// nodes are killed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	RequireCluster(t)
	c, err := startCluster(func() (string, error) { return t.TempDir(), nil }, false)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.close)
	return c
}

func startCluster(mkdir func() (string, error), ownDir bool) (c *Cluster, err error) {
	c = &Cluster{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for range clusterNodes {
		dir, err := mkdir()
		if err != nil {
			return nil, err
		}
		s, err := startServer(dir, ownDir, true, nil)
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
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
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
	deadline := time.Now().Add(timeout)
	for {
		err := c.checkReady()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %v not ready after %v: %v\n%s", c.Addrs(), timeout, err, c.allLogs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) checkReady() error {
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
		slots, err := c.slotMap(s)
		if err != nil {
			return err
		}
		for slot, owner := range slots {
			if owner == nil {
				return fmt.Errorf("%s: CLUSTER SLOTS does not cover slot %d", s.Addr(), slot)
			}
		}
	}
	return nil
}

// slotMap asks s for CLUSTER SLOTS and maps every slot to its master among
// c.nodes (nil when uncovered). Masters that are not cluster nodes of c, or
// whose address is not yet known, are reported as errors.
func (c *Cluster) slotMap(s *Server) ([]*Server, error) {
	v, err := command(s.Addr(), opTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", s.Addr(), err)
	}
	ranges, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: unexpected reply %T", s.Addr(), v)
	}
	slots := make([]*Server, clusterSlots)
	for _, r := range ranges {
		e, ok := r.([]any)
		if !ok || len(e) < 3 {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: bad entry %v", s.Addr(), r)
		}
		start, ok1 := e[0].(int64)
		end, ok2 := e[1].(int64)
		master, ok3 := e[2].([]any)
		if !ok1 || !ok2 || !ok3 || len(master) < 2 || start < 0 || end >= clusterSlots || start > end {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: bad entry %v", s.Addr(), r)
		}
		ip, _ := master[0].(string)
		port, _ := master[1].(int64)
		owner := c.nodeByAddr(ip, int(port))
		if owner == nil {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d served by unknown %q:%d", s.Addr(), start, end, ip, port)
		}
		for slot := start; slot <= end; slot++ {
			slots[slot] = owner
		}
	}
	return slots, nil
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

// Nodes returns the cluster's nodes (all masters).
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
	var errs []error
	for _, s := range c.nodes {
		v, err := command(s.Addr(), opTimeout, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: CLUSTER KEYSLOT: %w", s.Addr(), err))
			continue
		}
		slot, ok := v.(int64)
		if !ok || slot < 0 || slot >= clusterSlots {
			return nil, fmt.Errorf("%s: CLUSTER KEYSLOT replied %v", s.Addr(), v)
		}
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
