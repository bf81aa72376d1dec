package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// SentinelMaster is the name under which the Sentinels monitor the
	// primary.
	SentinelMaster = "redistest"
	// sentinelCount and sentinelQuorum: three Sentinels, two must agree.
	sentinelCount  = 3
	sentinelQuorum = 2
	// sentinelDownAfter is how long the primary must be unreachable before
	// a Sentinel considers it down.
	sentinelDownAfter = 1000 * time.Millisecond
	// sentinelReadyTimeout bounds the wait for the Sentinels to discover the
	// replica and each other (they say hello every 2s).
	sentinelReadyTimeout = 20 * time.Second
)

// Sentinel is a monitored replication group on loopback: a primary, one
// replica and three Sentinels (quorum two) watching the primary under the
// name SentinelMaster, ready for a *redis.FailoverClient.
type Sentinel struct {
	nodes     []*Server // the primary as started, then the replica
	sentinels []*Server
}

// StartSentinel starts the group and waits until the replica is in sync
// and every Sentinel knows the replica and the two other Sentinels. A
// primary unreachable for one second is failed over. Everything is killed
// when t ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	primary := Start(t)
	replica := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port()))
	g := &Sentinel{nodes: []*Server{primary, replica}}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s 10000\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		SentinelMaster, primary.Port(), sentinelQuorum, sentinelDownAfter.Milliseconds())
	for range sentinelCount {
		s, err := startSentinelServer(t.TempDir(), conf)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		t.Cleanup(s.close)
		g.sentinels = append(g.sentinels, s)
	}
	if err := g.waitReady(); err != nil {
		t.Fatalf("redistest: sentinel group: %v", err)
	}
	return g
}

// startSentinelServer runs the server binary (ServerBin) in Sentinel mode with a config file
// holding conf (Sentinel rewrites it, so each gets its own).
func startSentinelServer(dir, conf string) (*Server, error) {
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	s := &Server{
		bin:     ServerBin(),
		dir:     dir,
		pre:     []string{path, "--sentinel"},
		logPath: filepath.Join(dir, "redis.log"),
		outPath: filepath.Join(dir, "stdout.log"),
	}
	var lastErr error
	for range startAttempts {
		var err error
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		bindFailed, err := s.launchLocked()
		s.mu.Unlock()
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !bindFailed {
			break
		}
	}
	return nil, lastErr
}

func (g *Sentinel) waitReady() error {
	deadline := time.Now().Add(sentinelReadyTimeout)
	for {
		err := g.checkReady()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", sentinelReadyTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (g *Sentinel) checkReady() error {
	info, err := commandString(g.nodes[1].Addr(), opTimeout, "INFO", "replication")
	if err != nil {
		return err
	}
	if v, _ := infoField(info, "master_link_status"); v != "up" {
		return fmt.Errorf("replica %s: master_link_status %q", g.nodes[1].Addr(), v)
	}
	for _, s := range g.sentinels {
		m, err := sentinelFields(s.Addr(), "SENTINEL", "MASTER", SentinelMaster)
		if err != nil {
			return err
		}
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != strconv.Itoa(sentinelCount-1) {
			return fmt.Errorf("sentinel %s sees %s replicas and %s other sentinels",
				s.Addr(), m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

// sentinelFields runs a Sentinel command that answers with a flat list of
// field names and values.
func sentinelFields(addr string, args ...string) (map[string]string, error) {
	v, err := command(addr, opTimeout, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", addr, args, err)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: %v: unexpected reply %v", addr, args, v)
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		k, _ := list[i].(string)
		val, _ := list[i+1].(string)
		m[k] = val
	}
	return m, nil
}

// Addrs returns the Sentinels' addresses.
func (g *Sentinel) Addrs() []string {
	out := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// Nodes returns the data nodes: the primary as started, then the replica.
// Their roles change on a failover; Master tells the current one.
func (g *Sentinel) Nodes() []*Server { return append([]*Server(nil), g.nodes...) }

// Master returns the node that the first answering Sentinel names as the
// primary. It fails t if no Sentinel answers or it names an unknown node.
func (g *Sentinel) Master(t testing.TB) *Server {
	t.Helper()
	s, err := g.master()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

func (g *Sentinel) master() (*Server, error) {
	var lastErr error
	for _, s := range g.sentinels {
		v, err := command(s.Addr(), opTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			lastErr = err
			continue
		}
		addr, ok := v.([]any)
		if !ok || len(addr) != 2 {
			return nil, fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME replied %v", s.Addr(), v)
		}
		host, _ := addr[0].(string)
		port, _ := addr[1].(string)
		for _, n := range g.nodes {
			if host == "127.0.0.1" && port == strconv.Itoa(n.Port()) {
				return n, nil
			}
		}
		return nil, fmt.Errorf("sentinel %s names unknown primary %s:%s", s.Addr(), host, port)
	}
	return nil, fmt.Errorf("no sentinel answered: %v", lastErr)
}

// WaitFailover waits until every Sentinel names a primary other than old
// and that node reports the master role, and returns it. It fails t if that
// takes longer than within.
func (g *Sentinel) WaitFailover(t testing.TB, old *Server, within time.Duration) *Server {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s, err := g.promoted(old)
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: no failover from %s within %v: %v", old.Addr(), within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *Sentinel) promoted(old *Server) (*Server, error) {
	var found *Server
	for _, s := range g.sentinels {
		v, err := command(s.Addr(), opTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			return nil, err
		}
		addr, _ := v.([]any)
		if len(addr) != 2 || addr[1] == strconv.Itoa(old.Port()) {
			return nil, fmt.Errorf("sentinel %s still names %v", s.Addr(), v)
		}
		for _, n := range g.nodes {
			if addr[1] == strconv.Itoa(n.Port()) {
				found = n
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("sentinels name no known node")
	}
	role, err := command(found.Addr(), opTimeout, "ROLE")
	if r, ok := role.([]any); err != nil || !ok || len(r) == 0 || r[0] != "master" {
		return nil, fmt.Errorf("%s: ROLE = %v, %v", found.Addr(), role, err)
	}
	return found, nil
}

// NewFailoverClient returns a go-redis Sentinel-backed client for the
// group, closed when t ends. mod functions may adjust the options.
func (g *Sentinel) NewFailoverClient(t testing.TB, mod ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	opt := &redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: g.Addrs()}
	for _, f := range mod {
		f(opt)
	}
	rdb := redis.NewFailoverClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
