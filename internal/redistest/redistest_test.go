package redistest_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestServerSetGet(t *testing.T) {
	s := redistest.Start(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || s.Port() == 0 || s.Pid() == 0 {
		t.Fatalf("Addr=%q Port=%d Pid=%d", s.Addr(), s.Port(), s.Pid())
	}
	rdb := s.NewClient(t)
	if err := rdb.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx(t), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k = %q, %v", got, err)
	}
	cfg, err := rdb.ConfigGet(ctx(t), "bind").Result()
	if err != nil || cfg["bind"] != "127.0.0.1" {
		t.Fatalf("CONFIG GET bind = %v, %v", cfg, err)
	}
}

func TestServerExtraArgs(t *testing.T) {
	s := redistest.Start(t, "--maxmemory", "7mb")
	cfg, err := s.NewClient(t).ConfigGet(ctx(t), "maxmemory").Result()
	if err != nil || cfg["maxmemory"] != fmt.Sprint(7<<20) {
		t.Fatalf("CONFIG GET maxmemory = %v, %v", cfg, err)
	}
}

func TestServerBadArgsReportsLog(t *testing.T) {
	// A failing start must not hang and must surface redis-server's output;
	// run it through a fake TB to observe the Fatalf. Without the server
	// binary there is no output to surface: skip, as the other tiers do.
	redistest.Require(t)
	ft := (&fakeTB{TB: t}).run(func(tb testing.TB) {
		redistest.Start(tb, "--no-such-option", "x")
	})
	t.Logf("failure message:\n%s", ft.msg)
	if !strings.Contains(ft.msg, "no-such-option") {
		t.Fatalf("failure message does not quote redis-server's complaint:\n%s", ft.msg)
	}
}

// fakeTB records Fatalf and Skipf and ends the calling goroutine like
// testing does; everything else goes to the real test.
type fakeTB struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = true
	f.Fatalf(format, args...)
}

// run calls fn(f) on a goroutine of its own so that Goexit only ends that.
func (f *fakeTB) run(fn func(testing.TB)) *fakeTB {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestRequire(t *testing.T) {
	t.Setenv(redistest.TierEnv, "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv(redistest.RequireEnv, "")
	t.Setenv(redistest.ServerEnv, "")
	t.Setenv(redistest.CLIEnv, "")
	ft := (&fakeTB{TB: t}).run(redistest.Require)
	if !ft.skipped || ft.msg != "redis-server not installed; install the Debian package redis-server or set REDISYNC_SERVER (integration tier)" {
		t.Fatalf("without redis-server: skipped=%v msg=%q", ft.skipped, ft.msg)
	}
	ft = (&fakeTB{TB: t}).run(redistest.RequireCluster)
	if !ft.skipped || !strings.Contains(ft.msg, "cluster tier") {
		t.Fatalf("RequireCluster without redis-server: skipped=%v msg=%q", ft.skipped, ft.msg)
	}
	t.Setenv(redistest.RequireEnv, "1")
	ft = (&fakeTB{TB: t}).run(redistest.Require)
	if ft.skipped || !strings.Contains(ft.msg, "REDISYNC_REQUIRE_REDIS=1") {
		t.Fatalf("with %s=1: skipped=%v msg=%q", redistest.RequireEnv, ft.skipped, ft.msg)
	}
}

func TestServerRestart(t *testing.T) {
	s := redistest.Start(t)
	rdb := s.NewClient(t)
	if err := rdb.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port, pid := s.Port(), s.Pid()
	s.Restart(t)
	if s.Port() != port || s.Pid() == pid || s.Pid() == 0 {
		t.Fatalf("after Restart: port %d->%d pid %d->%d", port, s.Port(), pid, s.Pid())
	}
	// The old client reconnects to the same address; data is gone because
	// persistence is off.
	if err := rdb.Get(ctx(t), "k").Err(); err != redis.Nil {
		t.Fatalf("GET k after restart: %v, want redis.Nil", err)
	}
	if err := s.NewClient(t).Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestServerRestartWaitsForPort(t *testing.T) {
	s := redistest.Start(t)
	s.Stop()
	// Hold the port so the first restart attempts fail to bind.
	l, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { l.Close() })
	start := time.Now()
	s.Restart(t)
	if time.Since(start) < 400*time.Millisecond {
		t.Fatalf("Restart returned after %v while the port was still taken", time.Since(start))
	}
	if err := s.NewClient(t).Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestServerStopShutdown(t *testing.T) {
	s := redistest.Start(t)
	rdb := s.NewClient(t, func(o *redis.Options) { o.MaxRetries = -1 })
	s.Shutdown()
	if s.Pid() != 0 {
		t.Fatalf("Pid after Shutdown = %d", s.Pid())
	}
	if err := rdb.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("PING succeeded after Shutdown")
	}
	s.Shutdown() // no-op
	s.Restart(t)
	if err := rdb.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	s.Stop()
	s.Kill() // idempotent
	if err := rdb.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("PING succeeded after Stop")
	}
}

func TestClientCountPubSub(t *testing.T) {
	s := redistest.Start(t)
	rdb := s.NewClient(t)
	if n := redistest.ClientCount(t, rdb, "pubsub"); n != 0 {
		t.Fatalf("pubsub clients before Subscribe = %d", n)
	}
	ps := rdb.Subscribe(ctx(t), "ch")
	if _, err := ps.Receive(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := redistest.ClientCount(t, rdb, "pubsub"); n != 1 {
		t.Fatalf("pubsub clients via client = %d, want 1", n)
	}
	if n := s.ClientCount(t, "pubsub"); n != 1 {
		t.Fatalf("pubsub clients via server = %d, want 1", n)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.ClientCount(t, "pubsub") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("pubsub connection still open after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSharedServer(t *testing.T) {
	s := redistest.SharedServer(t)
	if redistest.SharedServer(t) != s {
		t.Fatal("SharedServer returned a different instance")
	}
	rdb := s.NewClient(t)
	key := redistest.UniqueName(t)
	if err := rdb.Set(ctx(t), key, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Flush(t)
	if n, err := rdb.DBSize(ctx(t)).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after Flush = %d, %v", n, err)
	}
}

func TestMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	if err := rdb.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := mr.Get("k"); err != nil || got != "v" {
		t.Fatalf("miniredis k = %q, %v", got, err)
	}
	if !strings.HasPrefix(mr.Addr(), "127.0.0.1:") {
		t.Fatalf("miniredis Addr = %q", mr.Addr())
	}
}

func TestUniqueName(t *testing.T) {
	seen := map[string]bool{}
	t.Run("sub test {with} spaces/and/slashes", func(t *testing.T) {
		for range 3 {
			n := redistest.UniqueName(t)
			if strings.ContainsAny(n, " {}/") || len(n) > 60 || seen[n] {
				t.Fatalf("bad or repeated name %q", n)
			}
			seen[n] = true
		}
	})
}

func TestCluster(t *testing.T) {
	start := time.Now()
	c := redistest.SharedCluster(t)
	t.Logf("cluster %v ready in %v", c.Addrs(), time.Since(start))
	if redistest.SharedCluster(t) != c {
		t.Fatal("SharedCluster returned a different instance")
	}
	if len(c.Nodes()) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("Nodes=%d Addrs=%d", len(c.Nodes()), len(c.Addrs()))
	}
	rdb := c.NewClient(t)

	// Find one key per node.
	byNode := map[*redistest.Server]string{}
	for i := 0; len(byNode) < 3; i++ {
		if i > 100 {
			t.Fatalf("100 keys hashed to only %d nodes", len(byNode))
		}
		key := fmt.Sprintf("%s:%d", redistest.UniqueName(t), i)
		if n := c.MasterFor(key); byNode[n] == "" {
			byNode[n] = key
		}
	}
	for node, key := range byNode {
		if err := rdb.Set(ctx(t), key, node.Addr(), 0).Err(); err != nil {
			t.Fatal(err)
		}
		// The key must be physically stored on the node MasterFor named.
		direct := node.NewClient(t)
		if got, err := direct.Get(ctx(t), key).Result(); err != nil || got != node.Addr() {
			t.Fatalf("GET %s directly on %s = %q, %v", key, node.Addr(), got, err)
		}
	}

	// Hash tags pin keys to one slot and hence one node.
	if a, b := c.MasterFor("{tag}a"), c.MasterFor("{tag}b"); a != b {
		t.Fatalf("{tag}a on %s but {tag}b on %s", a.Addr(), b.Addr())
	}

	c.Flush(t)
	err := rdb.ForEachMaster(ctx(t), func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if err == nil && n != 0 {
			err = fmt.Errorf("%s has %d keys after Flush", m.Options().Addr, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	ps := rdb.Subscribe(ctx(t), redistest.UniqueName(t))
	if _, err := ps.Receive(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := redistest.ClientCount(t, rdb, "pubsub"); n != 1 {
		t.Fatalf("cluster pubsub clients = %d, want 1", n)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStartClusterNodeRestart(t *testing.T) {
	start := time.Now()
	c := redistest.StartCluster(t)
	t.Logf("cluster %v ready in %v", c.Addrs(), time.Since(start))
	rdb := c.NewClient(t)
	node := c.MasterFor("k")
	if err := rdb.Set(ctx(t), "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	node.Restart(t)
	c.WaitReady(t)
	t.Logf("node %s rejoined in %v", node.Addr(), time.Since(start))
	if c.MasterFor("k") != node {
		t.Fatal("restarted node no longer owns its slots")
	}
	// The node came back empty (no persistence) but still owns the slot.
	if err := rdb.Get(ctx(t), "k").Err(); err != redis.Nil {
		t.Fatalf("GET k after restart: %v, want redis.Nil", err)
	}
	if err := rdb.Set(ctx(t), "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
