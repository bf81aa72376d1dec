package redistest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// The shared instances live for the whole test binary: they are not tied to
// the cleanup of the test that happened to start them, and Main stops them.
// A failed start is remembered so that later tests fail fast with the same
// error instead of waiting for another timeout.
var (
	sharedServerMu  sync.Mutex
	sharedServer    *Server
	sharedServerErr error

	sharedClusterMu  sync.Mutex
	sharedCluster    *Cluster
	sharedClusterErr error
)

// SharedServer returns the test binary's standalone server, starting it on
// first use. Callers must not Stop, Shutdown or Restart it, and must Flush it
// or use keys of their own (see UniqueName). The test binary must call Main
// from TestMain so that the server is stopped at the end.
func SharedServer(t testing.TB) *Server {
	t.Helper()
	Require(t)
	sharedServerMu.Lock()
	defer sharedServerMu.Unlock()
	if sharedServer == nil && sharedServerErr == nil {
		sharedServer, sharedServerErr = startOwnedServer()
	}
	if sharedServerErr != nil {
		t.Fatalf("redistest: shared server: %v", sharedServerErr)
	}
	return sharedServer
}

// startOwnedServer starts a standalone server in a directory of its own that
// is removed when the server is closed.
func startOwnedServer() (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	return startServer(dir, true, false, nil)
}

// SharedCluster returns the test binary's cluster, starting it on first use.
// The same rules as for SharedServer apply.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	RequireCluster(t)
	sharedClusterMu.Lock()
	defer sharedClusterMu.Unlock()
	if sharedCluster == nil && sharedClusterErr == nil {
		sharedCluster, sharedClusterErr = LaunchCluster(false)
	}
	if sharedClusterErr != nil {
		t.Fatalf("redistest: shared cluster: %v", sharedClusterErr)
	}
	return sharedCluster
}

// stopShared stops the shared instances (if any were started).
func stopShared() {
	sharedServerMu.Lock()
	if sharedServer != nil {
		sharedServer.close()
		sharedServer = nil
	}
	sharedServerMu.Unlock()

	sharedClusterMu.Lock()
	if sharedCluster != nil {
		sharedCluster.close()
		sharedCluster = nil
	}
	sharedClusterMu.Unlock()
}

// Main runs the tests, stops the shared instances and, if all tests passed,
// fails the binary when goroutines leaked. Call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// The leak check uses goleak's defaults with no extra ignores: every client
// the helpers create is closed by a test cleanup, and servers are separate
// processes whose wait goroutines end when they are stopped.
func Main(m *testing.M) {
	code := m.Run()
	stopShared()
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: goroutines leaked after all tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
