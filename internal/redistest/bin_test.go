package redistest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

// wrapper writes a shell script into dir that appends one line to log each
// time it runs and then execs the binary real resolves to (as configured
// before the test changes the environment), so the process keeps its pid.
func wrapper(t *testing.T, dir, name, real, log string) string {
	t.Helper()
	path, err := exec.LookPath(real)
	if err != nil {
		t.Skipf("%s not installed", real)
	}
	script := filepath.Join(dir, name)
	body := fmt.Sprintf("#!/bin/sh\necho started >>'%s'\nexec '%s' \"$@\"\n", log, path)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func starts(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "started\n")
}

// TestServerBinaryFromEnv checks that Start and Restart run the binary
// REDISYNC_SERVER names, and that a restart keeps the binary the server was
// started with.
func TestServerBinaryFromEnv(t *testing.T) {
	redistest.Require(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "server.log")
	t.Setenv(redistest.ServerEnv, wrapper(t, dir, "server-wrapper", redistest.ServerBin(), log))
	s := redistest.Start(t)
	if n := starts(t, log); n != 1 {
		t.Fatalf("wrapper started %d times after Start, want 1", n)
	}
	if err := s.NewClient(t).Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(redistest.ServerEnv, "no-such-server")
	s.Restart(t)
	if n := starts(t, log); n != 2 {
		t.Fatalf("wrapper started %d times after Restart, want 2", n)
	}
}

// TestClusterBinariesFromEnv checks that StartCluster runs the server
// REDISYNC_SERVER names on every node and creates the cluster with the
// client REDISYNC_CLI names.
func TestClusterBinariesFromEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	redistest.RequireCluster(t)
	dir := t.TempDir()
	serverLog, cliLog := filepath.Join(dir, "server.log"), filepath.Join(dir, "cli.log")
	t.Setenv(redistest.ServerEnv, wrapper(t, dir, "server-wrapper", redistest.ServerBin(), serverLog))
	t.Setenv(redistest.CLIEnv, wrapper(t, dir, "cli-wrapper", redistest.CLIBin(), cliLog))
	c := redistest.StartCluster(t)
	if n := starts(t, serverLog); n != len(c.Nodes()) {
		t.Fatalf("server wrapper started %d times, want %d", n, len(c.Nodes()))
	}
	if n := starts(t, cliLog); n != 1 {
		t.Fatalf("cli wrapper started %d times, want 1", n)
	}
}

func TestRequireNamesEnv(t *testing.T) {
	t.Setenv(redistest.TierEnv, "")
	t.Setenv(redistest.RequireEnv, "")
	t.Setenv(redistest.ServerEnv, "no-such-server")
	ft := (&fakeTB{TB: t}).run(redistest.Require)
	if !ft.skipped || !strings.Contains(ft.msg, "no-such-server") || !strings.Contains(ft.msg, redistest.ServerEnv) {
		t.Fatalf("with %s=no-such-server: skipped=%v msg=%q", redistest.ServerEnv, ft.skipped, ft.msg)
	}
	t.Setenv(redistest.ServerEnv, "")
	t.Setenv(redistest.CLIEnv, "no-such-cli")
	ft = (&fakeTB{TB: t}).run(redistest.RequireCluster)
	if _, err := exec.LookPath(redistest.DefaultServer); err == nil &&
		(!ft.skipped || !strings.Contains(ft.msg, "no-such-cli") || !strings.Contains(ft.msg, redistest.CLIEnv)) {
		t.Fatalf("with %s=no-such-cli: skipped=%v msg=%q", redistest.CLIEnv, ft.skipped, ft.msg)
	}
	t.Setenv(redistest.RequireEnv, "1")
	ft = (&fakeTB{TB: t}).run(redistest.RequireCluster)
	if ft.skipped || !strings.Contains(ft.msg, redistest.RequireEnv+"=1") {
		t.Fatalf("with %s=1: skipped=%v msg=%q", redistest.RequireEnv, ft.skipped, ft.msg)
	}
}

// TestClusterCreateFailureReported checks that a cluster whose creation
// fails fails the test with the client's output, and that LaunchCluster
// reports a missing client, instead of either panicking.
func TestClusterCreateFailureReported(t *testing.T) {
	redistest.RequireCluster(t)
	dir := t.TempDir()
	cli := filepath.Join(dir, "failing-cli")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\necho cluster create refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(redistest.CLIEnv, cli)
	ft := (&fakeTB{TB: t}).run(func(tb testing.TB) { redistest.StartCluster(tb) })
	if !strings.Contains(ft.msg, "cluster create refused") {
		t.Fatalf("StartCluster with a failing %s: %q", redistest.CLIEnv, ft.msg)
	}
	t.Setenv(redistest.CLIEnv, "no-such-cli")
	if c, err := redistest.LaunchCluster(false); err == nil || !strings.Contains(err.Error(), "no-such-cli") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("LaunchCluster with %s=no-such-cli: %v", redistest.CLIEnv, err)
	}
}
