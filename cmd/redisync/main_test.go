package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	if reaping() {
		os.Exit(reap(os.Args[1:])) // the test binary is lock's reaper too
	}
	redistest.HelperMain(m, map[string]redistest.HelperFunc{
		// redisync ARGS... is the program run as a process, for the tests
		// that send it signals. Its last line is its exit code.
		"redisync": func(_ context.Context, args []string, _ <-chan string) error {
			code := runMain(args)
			fmt.Println("redisync exit", code)
			os.Exit(code)
			return nil
		},
	})
}

// runCmd runs the command line args and returns its exit code, stdout
// and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// mustRun runs args and fails t unless the exit code is want.
func mustRun(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	code, stdout, stderr := runCmd(t, args...)
	if code != want {
		t.Fatalf("redisync %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

// backend is one kind of deployment the tests run the commands against.
type backend struct {
	name   string
	flags  []string                   // connection flags for the command line
	rdb    redis.UniversalClient      // for the test's own reads and writes
	numSub func(channel string) int64 // subscribers of a lock's channel
	// client returns another client, as another process would have one;
	// it is closed when the test ends.
	client func() redis.UniversalClient
}

// args returns the command line args followed by b's connection flags.
func (b backend) args(args ...string) []string { return append(args, b.flags...) }

// awaitLock waits for a Lock running in another goroutine to report on
// got, failing t if it fails or takes more than a few seconds.
func awaitLock(t *testing.T, got <-chan error, what string) {
	t.Helper()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting after 5s", what)
	}
}

// backends returns miniredis, the shared real server and the shared real
// cluster; the real ones skip when redis-server is not installed.
func backends(t *testing.T) map[string]func(t *testing.T) backend {
	return map[string]func(t *testing.T) backend{
		"miniredis": func(t *testing.T) backend {
			mr, rdb := redistest.Mini(t)
			return backend{name: "miniredis", flags: []string{"--redis", "redis://" + mr.Addr()}, rdb: rdb,
				numSub: func(ch string) int64 { return redistest.NumSub(t, rdb, ch) },
				client: func() redis.UniversalClient {
					c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
					t.Cleanup(func() { _ = c.Close() })
					return c
				}}
		},
		"server": func(t *testing.T) backend {
			srv := redistest.SharedServer(t)
			rdb := srv.NewClient(t)
			return backend{name: "server", flags: []string{"--redis", "redis://" + srv.Addr()}, rdb: rdb,
				numSub: func(ch string) int64 { return redistest.NumSub(t, rdb, ch) },
				client: func() redis.UniversalClient { return srv.NewClient(t) }}
		},
		"cluster": func(t *testing.T) backend {
			c := redistest.SharedCluster(t)
			rdb := c.NewClient(t)
			return backend{name: "cluster", flags: []string{"--cluster", strings.Join(c.Addrs(), ",")}, rdb: rdb,
				numSub: func(ch string) int64 { return redistest.ShardNumSub(t, c.MasterFor(ch).NewClient(t), ch) },
				client: func() redis.UniversalClient { return c.NewClient(t) }}
		},
	}
}

// miniBackend starts a miniredis and returns its address and a client.
func miniBackend(t *testing.T) (string, redis.UniversalClient) {
	mr, rdb := redistest.Mini(t)
	return mr.Addr(), rdb
}

// forEachBackend runs f as a subtest on every backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, name := range []string{"miniredis", "server", "cluster"} {
		t.Run(name, func(t *testing.T) { f(t, backends(t)[name](t)) })
	}
}

// assertNoRunKeys fails t if a demo or bench run left keys behind.
func assertNoRunKeys(t *testing.T, rdb redis.UniversalClient, tool string) {
	t.Helper()
	keys, err := scanAll(context.Background(), rdb, runPatterns("redisync-"+tool+"-")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Fatalf("%s left keys behind: %v", tool, keys)
	}
}

// withPrimitive registers p for the rest of t.
func withPrimitive(t *testing.T, p primitive) {
	saved := registered
	registered = append(registered[:len(registered):len(registered)], p)
	t.Cleanup(func() { registered = saved })
}

// noLock is a broken distributed lock: it excludes nobody.
type noLock struct{}

func (noLock) Lock(context.Context) error   { return nil }
func (noLock) Unlock(context.Context) error { return nil }

var brokenPrimitive = primitive{
	name:     "broken",
	order:    99,
	newMutex: func(redis.UniversalClient, string) mutex { return noLock{} },
	kind:     "broken",
	forceUnlock: func(context.Context, redis.UniversalClient, string) (bool, error) {
		return false, nil
	},
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// tableRow returns the cells after the label of the table row starting
// with label.
func tableRow(t *testing.T, out, label string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, label+" "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no row %q in:\n%s", label, out)
	return nil
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
