package redistest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What a test does to a running cluster: look up roles, node IDs and slots,
// move a slot from one master to another, fail a master over to its replica,
// and count what pub/sub left on a node.

const (
	// moveTimeout bounds a slot migration or a failover, from the first
	// command until every node agrees on the outcome.
	moveTimeout = 20 * time.Second
	// migrateBatch is how many keys one MIGRATE moves.
	migrateBatch = 100
	// migrateTimeoutMs is MIGRATE's own timeout, in milliseconds.
	migrateTimeoutMs = 2000
	// manualFailoverTimeout is a little more than the time Redis and Valkey
	// give a manual failover (5 s) before they abort it silently; Failover
	// asks again once after it.
	manualFailoverTimeout = 6 * time.Second
)

// nodeRole is what ROLE says of a node.
type nodeRole struct {
	master   bool
	replicas []*Server // a master's online replicas among the cluster's nodes
	of       *Server   // a replica's master, nil if not a node of the cluster
	ofAddr   string    // a replica's master as ROLE names it
	state    string    // a replica's replication state
	linkUp   bool      // state is "connected"
}

// role asks s for ROLE.
func (c *Cluster) role(s *Server) (nodeRole, error) {
	v, err := command(s.Addr(), opTimeout, "ROLE")
	if err != nil {
		return nodeRole{}, fmt.Errorf("%s: ROLE: %w", s.Addr(), err)
	}
	bad := func() (nodeRole, error) { return nodeRole{}, fmt.Errorf("%s: ROLE: unexpected reply %v", s.Addr(), v) }
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return bad()
	}
	switch r[0] {
	case "master":
		if len(r) < 3 {
			return bad()
		}
		list, ok := r[2].([]any)
		if !ok {
			return bad()
		}
		role := nodeRole{master: true}
		for _, e := range list {
			// [ip, port, offset], all bulk strings; ROLE lists online
			// replicas only.
			replica, ok := e.([]any)
			if !ok || len(replica) < 2 {
				return bad()
			}
			ip, _ := replica[0].(string)
			port, _ := replica[1].(string)
			p, _ := strconv.Atoi(port)
			if n := c.nodeByAddr(ip, p); n != nil {
				role.replicas = append(role.replicas, n)
			}
		}
		return role, nil
	case "slave":
		if len(r) < 4 {
			return bad()
		}
		ip, _ := r[1].(string)
		port, _ := r[2].(int64)
		state, _ := r[3].(string)
		return nodeRole{
			of:     c.nodeByAddr(ip, int(port)),
			ofAddr: fmt.Sprintf("%s:%d", ip, port),
			state:  state,
			linkUp: state == "connected",
		}, nil
	default:
		return bad()
	}
}

// roles asks every node for ROLE.
func (c *Cluster) roles() (map[*Server]nodeRole, error) {
	roles := make(map[*Server]nodeRole, len(c.nodes))
	for _, s := range c.nodes {
		r, err := c.role(s)
		if err != nil {
			return nil, err
		}
		roles[s] = r
	}
	return roles, nil
}

// liveRoles asks every node that has not been stopped (Stop, Kill,
// Shutdown) for ROLE, failing t when one does not answer.
func (c *Cluster) liveRoles(t testing.TB) map[*Server]nodeRole {
	t.Helper()
	roles := map[*Server]nodeRole{}
	for _, s := range c.nodes {
		if s.Pid() == 0 {
			continue
		}
		r, err := c.role(s)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		roles[s] = r
	}
	return roles
}

// Masters returns the nodes whose ROLE is master now, in the order of
// Nodes; stopped nodes are left out. It fails t when a running node does
// not answer.
func (c *Cluster) Masters(t testing.TB) []*Server {
	t.Helper()
	roles := c.liveRoles(t)
	var masters []*Server
	for _, s := range c.nodes {
		if r, ok := roles[s]; ok && r.master {
			masters = append(masters, s)
		}
	}
	return masters
}

// ReplicaOf returns the node whose ROLE names master as its master (the
// first in the order of Nodes). It fails t when master has none, e.g. in a
// cluster from StartCluster, or when a running node does not answer.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	roles := c.liveRoles(t)
	for _, s := range c.nodes {
		if r, ok := roles[s]; ok && !r.master && r.of == master {
			return s
		}
	}
	t.Fatalf("redistest: no node of %v is a replica of %s", c.Addrs(), master.Addr())
	return nil
}

// NodeID returns s's cluster node ID (CLUSTER MYID).
func (c *Cluster) NodeID(t testing.TB, s *Server) string {
	t.Helper()
	id, err := nodeID(s)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return id
}

func nodeID(s *Server) (string, error) {
	id, err := commandString(s.Addr(), opTimeout, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER MYID: %w", s.Addr(), err)
	}
	return id, nil
}

// SlotOf returns key's hash slot, as CLUSTER KEYSLOT on the first node that
// answers computes it. Like MasterFor it panics when no node answers.
func (c *Cluster) SlotOf(key string) int {
	slot, err := c.slotOf(key)
	if err != nil {
		panic(fmt.Sprintf("redistest: SlotOf(%q): %v", key, err))
	}
	return slot
}

func (c *Cluster) slotOf(key string) (int, error) {
	var errs []error
	for _, s := range c.nodes {
		v, err := command(s.Addr(), opTimeout, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: CLUSTER KEYSLOT: %w", s.Addr(), err))
			continue
		}
		slot, ok := v.(int64)
		if !ok || slot < 0 || slot >= clusterSlots {
			return 0, fmt.Errorf("%s: CLUSTER KEYSLOT replied %v", s.Addr(), v)
		}
		return int(slot), nil
	}
	if len(errs) == 0 {
		return 0, errors.New("cluster has no node")
	}
	return 0, errors.Join(errs...)
}

// Migration is a hash slot being moved from one master to another, begun
// by BeginMigration. Until Finish, the source answers commands for keys it
// no longer has with ASK redirections to the target.
type Migration struct {
	c            *Cluster
	slot         int
	src, dst     *Server
	srcID, dstID string
}

// MigrateSlot moves slot, with every key in it, from its master to the
// master to, as redis-cli --cluster reshard does: BeginMigration, then
// Finish. It returns once every node's CLUSTER SLOTS names to as the slot's
// master, and fails t otherwise.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	c.BeginMigration(t, slot, to).Finish(t)
}

// BeginMigration starts moving slot from its current master to the master
// to: CLUSTER SETSLOT slot IMPORTING <source ID> on to, then CLUSTER SETSLOT
// slot MIGRATING <to's ID> on the source. It moves no key. It fails t when to
// is not a master or already owns slot.
func (c *Cluster) BeginMigration(t testing.TB, slot int, to *Server) *Migration {
	t.Helper()
	if slot < 0 || slot >= clusterSlots {
		t.Fatalf("redistest: BeginMigration: slot %d out of range", slot)
	}
	src, err := c.ownerOf(slot)
	if err != nil {
		t.Fatalf("redistest: BeginMigration: owner of slot %d: %v", slot, err)
	}
	if src == to {
		t.Fatalf("redistest: BeginMigration: slot %d is already served by %s", slot, to.Addr())
	}
	if r, err := c.role(to); err != nil || !r.master {
		t.Fatalf("redistest: BeginMigration: target %s is not a master (%v)", to.Addr(), err)
	}
	m := &Migration{c: c, slot: slot, src: src, dst: to}
	if m.srcID, err = nodeID(src); err == nil {
		m.dstID, err = nodeID(to)
	}
	if err != nil {
		t.Fatalf("redistest: BeginMigration: %v", err)
	}
	m.setSlot(t, to, "IMPORTING", m.srcID)
	m.setSlot(t, src, "MIGRATING", m.dstID)
	return m
}

// Source returns the master the slot is moved from.
func (m *Migration) Source() *Server { return m.src }

// Target returns the master the slot is moved to.
func (m *Migration) Target() *Server { return m.dst }

// Slot returns the slot being moved.
func (m *Migration) Slot() int { return m.slot }

// setSlot runs CLUSTER SETSLOT <slot> <args...> on s.
func (m *Migration) setSlot(t testing.TB, s *Server, args ...string) {
	t.Helper()
	cmd := append([]string{"CLUSTER", "SETSLOT", strconv.Itoa(m.slot)}, args...)
	if _, err := command(s.Addr(), opTimeout, cmd...); err != nil {
		t.Fatalf("redistest: %s on %s: %v\n%s", strings.Join(cmd, " "), s.Addr(), err, s.logs(0, 0))
	}
}

// MoveKeys moves every key of the slot from the source to the target
// (CLUSTER GETKEYSINSLOT, then MIGRATE ... KEYS, in batches, until the
// source has none left) and returns how many it moved. Finish calls it
// again, so a test may call it to stop after the keys moved but before the
// slot's owner changes.
func (m *Migration) MoveKeys(t testing.TB) int {
	t.Helper()
	moved := 0
	deadline := time.Now().Add(moveTimeout)
	for {
		v, err := command(m.src.Addr(), opTimeout, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), strconv.Itoa(migrateBatch))
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", m.slot, m.src.Addr(), err)
		}
		list, ok := v.([]any)
		if !ok {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: unexpected reply %v", m.slot, m.src.Addr(), v)
		}
		if len(list) == 0 {
			return moved
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: slot %d: %s still has keys after %v of MIGRATE", m.slot, m.src.Addr(), moveTimeout)
		}
		cmd := []string{"MIGRATE", "127.0.0.1", strconv.Itoa(m.dst.Port()), "", "0", strconv.Itoa(migrateTimeoutMs), "KEYS"}
		for _, k := range list {
			key, ok := k.(string)
			if !ok {
				t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: unexpected key %v", m.slot, m.src.Addr(), k)
			}
			cmd = append(cmd, key)
		}
		// MIGRATE replies NOKEY when all the keys expired meanwhile.
		if _, err := command(m.src.Addr(), opTimeout, cmd...); err != nil {
			t.Fatalf("redistest: MIGRATE of %d keys of slot %d from %s to %s: %v", len(list), m.slot, m.src.Addr(), m.dst.Addr(), err)
		}
		moved += len(list)
	}
}

// Finish completes the migration: it moves the keys left (MoveKeys), runs
// CLUSTER SETSLOT slot NODE <target ID> on the target, the source and every
// other master, in that order, and waits until every running node's CLUSTER
// SLOTS names the target as the slot's master.
func (m *Migration) Finish(t testing.TB) {
	t.Helper()
	m.MoveKeys(t)
	m.setSlot(t, m.dst, "NODE", m.dstID)
	m.setSlot(t, m.src, "NODE", m.dstID)
	for _, s := range m.c.Masters(t) {
		if s != m.src && s != m.dst {
			m.setSlot(t, s, "NODE", m.dstID)
		}
	}
	err := m.c.waitUntil(moveTimeout, func() error {
		return m.c.onLiveNodes(func(s *Server) error {
			slots, err := m.c.slotMap(s)
			if err != nil {
				return err
			}
			if got := slots[m.slot]; got != m.dst {
				return fmt.Errorf("%s: CLUSTER SLOTS has slot %d on %s, want %s", s.Addr(), m.slot, addrOf(got), m.dst.Addr())
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("redistest: migration of slot %d from %s to %s: %v", m.slot, m.src.Addr(), m.dst.Addr(), err)
	}
}

// onLiveNodes runs check on every running node (those not stopped by Stop,
// Kill or Shutdown) and returns the first failure.
func (c *Cluster) onLiveNodes(check func(*Server) error) error {
	for _, s := range c.nodes {
		if s.Pid() == 0 {
			continue
		}
		if err := check(s); err != nil {
			return err
		}
	}
	return nil
}

// waitUntil polls check until it returns nil or timeout has passed, and
// returns the last failure then, with the nodes' logs.
func (c *Cluster) waitUntil(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %v: %w\n%s", timeout, err, c.allLogs())
		}
		time.Sleep(pollInterval)
	}
}

// Failover promotes master's replica with CLUSTER FAILOVER (a manual,
// coordinated failover: no write is lost) and returns it. It waits until the
// replica's ROLE is master, the old master's ROLE is replica of it with its
// link up, and every node's CLUSTER SLOTS gives the old master's slots to
// the new one and lists the old master as its replica; so Failover can be
// called again at once, e.g. to fail back. It fails t otherwise, or when
// master has no replica.
func (c *Cluster) Failover(t testing.TB, master *Server) (newMaster *Server) {
	t.Helper()
	if r, err := c.role(master); err != nil || !r.master {
		t.Fatalf("redistest: Failover: %s is not a master (%v)", master.Addr(), err)
	}
	replica := c.ReplicaOf(t, master)
	before, err := c.slotMap(master)
	if err != nil {
		t.Fatalf("redistest: Failover: %v", err)
	}
	var owned []int
	for slot, owner := range before {
		if owner == master {
			owned = append(owned, slot)
		}
	}
	failover := func() {
		if _, err := command(replica.Addr(), opTimeout, "CLUSTER", "FAILOVER"); err != nil {
			t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v\n%s", replica.Addr(), err, replica.logs(0, 0))
		}
	}
	failover()
	retry := time.Now().Add(manualFailoverTimeout)
	err = c.waitUntil(moveTimeout, func() error {
		r, err := c.role(replica)
		if err != nil {
			return err
		}
		if !r.master {
			if !retry.IsZero() && time.Now().After(retry) {
				// The manual failover timed out and was aborted.
				retry = time.Time{}
				failover()
			}
			return fmt.Errorf("%s: ROLE is still replica", replica.Addr())
		}
		if r, err = c.role(master); err != nil {
			return err
		}
		if r.master || r.of != replica || !r.linkUp {
			return fmt.Errorf("%s: ROLE is not a connected replica of %s (master %v, of %s, state %q)",
				master.Addr(), replica.Addr(), r.master, r.ofAddr, r.state)
		}
		return c.onLiveNodes(func(s *Server) error {
			ranges, err := c.slotRanges(s)
			if err != nil {
				return err
			}
			slots := rangesToSlots(ranges)
			for _, slot := range owned {
				if slots[slot] != replica {
					return fmt.Errorf("%s: CLUSTER SLOTS has slot %d on %s, want %s", s.Addr(), slot, addrOf(slots[slot]), replica.Addr())
				}
			}
			for _, rg := range ranges {
				if rg.master == replica && !slices.Contains(rg.replicas, master) {
					return fmt.Errorf("%s: CLUSTER SLOTS does not list %s as a replica of %s", s.Addr(), master.Addr(), replica.Addr())
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("redistest: failover of %s to %s: %v", master.Addr(), replica.Addr(), err)
	}
	return replica
}

// PubSubClients returns how many of s's connections are of type pubsub
// (CLIENT LIST TYPE pubsub): those subscribed to at least one channel,
// pattern or shard channel.
func PubSubClients(t testing.TB, s *Server) int {
	t.Helper()
	return s.ClientCount(t, "pubsub")
}

// NamesOnEveryMaster returns one name per master of c, each of the form
// "<UniqueName(t)>-<i>", chosen so that key(name) is served by a different
// master: for tests that must touch every master. key maps a name to the
// key whose slot decides (the primitive's main key).
func (c *Cluster) NamesOnEveryMaster(t testing.TB, key func(name string) string) []string {
	t.Helper()
	masters := len(c.Masters(t))
	base := UniqueName(t)
	seen := map[string]bool{}
	var names []string
	for i := 0; len(names) < masters && i < 1000; i++ {
		name := fmt.Sprintf("%s-%d", base, i)
		addr := c.MasterFor(key(name)).Addr()
		if !seen[addr] {
			seen[addr] = true
			names = append(names, name)
		}
	}
	if len(names) < masters {
		t.Fatalf("redistest: found names on only %d of %d masters", len(names), masters)
	}
	return names
}

// ShardChannelsWithPrefix returns the shard channels starting with prefix
// that some node of c has subscribers for (PUBSUB SHARDCHANNELS on every
// node), once per node that lists it.
func (c *Cluster) ShardChannelsWithPrefix(t testing.TB, prefix string) []string {
	t.Helper()
	var out []string
	for _, s := range c.Nodes() {
		for _, ch := range ShardChannels(t, s) {
			if strings.HasPrefix(ch, prefix) {
				out = append(out, ch)
			}
		}
	}
	return out
}

// PubSubClientsNamed is PubSubClients counting only the connections named
// name (CLIENT SETNAME, go-redis's ClientName option), so that a test on a
// shared cluster counts its own client's connections.
func PubSubClientsNamed(t testing.TB, s *Server, name string) int {
	t.Helper()
	list, err := commandString(s.Addr(), opTimeout, "CLIENT", "LIST", "TYPE", "pubsub")
	if err != nil {
		t.Fatalf("redistest: CLIENT LIST TYPE pubsub on %s: %v", s.Addr(), err)
	}
	n := 0
	for line := range strings.SplitSeq(list, "\n") {
		if strings.Contains(line, " name="+name+" ") {
			n++
		}
	}
	return n
}

// ShardChannels returns the shard channels s has subscribers for (PUBSUB
// SHARDCHANNELS), sorted.
func ShardChannels(t testing.TB, s *Server) []string {
	t.Helper()
	v, err := command(s.Addr(), opTimeout, "PUBSUB", "SHARDCHANNELS")
	if err != nil {
		t.Fatalf("redistest: PUBSUB SHARDCHANNELS on %s: %v", s.Addr(), err)
	}
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("redistest: PUBSUB SHARDCHANNELS on %s: unexpected reply %v", s.Addr(), v)
	}
	channels := make([]string, 0, len(list))
	for _, e := range list {
		ch, ok := e.(string)
		if !ok {
			t.Fatalf("redistest: PUBSUB SHARDCHANNELS on %s: unexpected element %v", s.Addr(), e)
		}
		channels = append(channels, ch)
	}
	slices.Sort(channels)
	return channels
}

// sameServers reports whether a and b hold the same servers, in any order.
func sameServers(a, b []*Server) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func addrOf(s *Server) string {
	if s == nil {
		return "no node"
	}
	return s.Addr()
}

func addrs(ss []*Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = addrOf(s)
	}
	return out
}
