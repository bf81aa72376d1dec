package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// The environment variables that choose the binaries the helpers run. They
// are read whenever a binary is chosen (a Server keeps the one it was first
// started with for its restarts), so t.Setenv works for a test's own
// instances; the shared instances take the value at their first use.
const (
	// ServerEnv names the server binary, a name on PATH or a path. The
	// default is "redis-server"; "valkey-server" runs the tiers on Valkey.
	// Sentinels are the same binary started with --sentinel.
	ServerEnv = "REDISYNC_SERVER"
	// CLIEnv names the command-line client that creates clusters
	// (--cluster create). The default is "redis-cli"; Valkey's is
	// "valkey-cli".
	CLIEnv = "REDISYNC_CLI"
)

// DefaultServer and DefaultCLI are the binaries used when ServerEnv and
// CLIEnv are unset or empty.
const (
	DefaultServer = "redis-server"
	DefaultCLI    = "redis-cli"
)

// ServerBin returns the server binary the helpers start: $REDISYNC_SERVER,
// or redis-server.
func ServerBin() string { return envOr(ServerEnv, DefaultServer) }

// CLIBin returns the client binary that creates clusters: $REDISYNC_CLI, or
// redis-cli.
func CLIBin() string { return envOr(CLIEnv, DefaultCLI) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Require skips t when the configured server binary (ServerBin) is not
// found, or fails it when REDISYNC_REQUIRE_REDIS=1. Start and SharedServer
// call it themselves.
//
// With TierEnv set to "cluster" it skips t: that run is the cluster tier.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(TierEnv) == "cluster" {
		t.Skipf("%s=cluster: the cluster tier runs only the tests on a cluster (and the miniredis unit tier)", TierEnv)
	}
	require(t, ServerEnv, ServerBin(), DefaultServer, "integration tier")
}

// TierEnv narrows a run to one real-server tier. Set to "cluster", every
// test that starts a standalone server (Start, SharedServer, and what is
// built on them) skips, and what runs is the cluster tier: the tests on a
// real cluster (StartCluster, SharedCluster: the tests with Cluster in
// their name and the "cluster" subtests of those that run on both), with
// the miniredis unit tier, which takes seconds. .ci/servers runs it on
// every server of the matrix:
//
//	REDISYNC_TIER=cluster go test -race ./...
const TierEnv = "REDISYNC_TIER"

// RequireCluster is Require for the cluster tier: it also needs the
// configured client binary (CLIBin), and it skips t under -short.
// StartCluster and SharedCluster call it themselves.
func RequireCluster(t testing.TB) {
	t.Helper()
	require(t, ServerEnv, ServerBin(), DefaultServer, "cluster tier")
	require(t, CLIEnv, CLIBin(), DefaultCLI, "cluster tier")
	if testing.Short() {
		// Creating a cluster takes seconds per package; the quick tier
		// leaves the cluster tier to the full run.
		t.Skip("cluster tier: the quick tier (-short) skips it, the full run does not")
	}
}

// require looks bin up; env is the variable that chose it and def its
// default, so that the message says how to get or change it.
func require(t testing.TB, env, bin, def, tier string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err == nil {
		return
	}
	hint := fmt.Sprintf("%s=%s (%s)", env, bin, tier)
	if os.Getenv(env) == "" {
		pkg := map[string]string{DefaultServer: "redis-server", DefaultCLI: "redis-tools"}[def]
		hint = fmt.Sprintf("install the Debian package %s or set %s (%s)", pkg, env, tier)
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("redistest: %s=1 but %s is not found; %s", RequireEnv, bin, hint)
	}
	t.Skipf("%s not installed; %s", bin, hint)
}
