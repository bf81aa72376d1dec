package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A redisNode is a redis-server of the harness, in a network namespace
// of its own (see serverNS) on the Redis bridge. Without persist it keeps
// no data across a restart (no RDB, no AOF): a restart loses every lock.
// With persist it writes an AOF fsynced on every write, and a restart
// keeps them. With replicaOf set it starts as a replica of that address.
type redisNode struct {
	k         int // its namespace and address: serverNS(k), serverIP(k)
	port      int
	dir       string
	persist   bool
	replicaOf string
	env       []string     // extra environment (the clock shim)
	clock     *serverClock // the server's clock offset, with the shim
	proc      *proc
	log       *os.File
}

func (n *redisNode) addr() string { return net.JoinHostPort(serverIP(n.k), strconv.Itoa(n.port)) }

// redisPort is the port of every server, each on an address of its own.
const redisPort = 6379

// freePort picks a free TCP port on the Redis bridge.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// newRedisNode prepares server k in dir; with shim set, its clock can be
// moved.
func newRedisNode(k int, dir string, persist bool, shim string) (*redisNode, error) {
	var err error
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	n := &redisNode{k: k, port: redisPort, dir: dir, persist: persist, log: log}
	if shim != "" {
		if n.clock, err = newServerClock(filepath.Join(dir, "clock")); err != nil {
			return nil, err
		}
		n.env = n.clock.env(shim)
	}
	return n, nil
}

// start starts the server and waits until it answers.
func (n *redisNode) start(ctx context.Context) error {
	aof := "no"
	if n.persist {
		aof = "yes"
	}
	argv := []string{"ip", "netns", "exec", serverNS(n.k), "redis-server", "--port", strconv.Itoa(n.port),
		"--bind", serverIP(n.k), "--protected-mode", "no", "--save", "", "--appendonly", aof,
		"--appendfsync", "always", "--dir", n.dir, "--daemonize", "no",
		// A replica's full sync starts at once rather than after the 5s
		// Redis waits by default for more replicas to share it.
		"--repl-diskless-sync-delay", "0"}
	if n.replicaOf != "" {
		host, port, _ := net.SplitHostPort(n.replicaOf)
		argv = append(argv, "--replicaof", host, port)
	}
	p, err := startProc("redis-server", n.log, n.env, argv...)
	if err != nil {
		return err
	}
	n.proc = p
	return n.waitReady(ctx)
}

func (n *redisNode) waitReady(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if n.proc.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis-server on %s did not start: %v (log %s)", n.addr(), err, n.log.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restart kills the server with SIGKILL and starts it again on its port.
func (n *redisNode) restart(ctx context.Context) error {
	n.proc.kill()
	return n.start(ctx)
}

// close kills the server.
func (n *redisNode) close() {
	if n.proc != nil {
		n.proc.kill()
	}
	_ = n.log.Close()
	if n.clock != nil {
		n.clock.close()
	}
}

// client is a go-redis client of the harness's own, for setup and checks.
func (n *redisNode) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.addr(), DialTimeout: time.Second})
}

// keysWithoutTTL lists the keys that would live forever.
func (n *redisNode) keysWithoutTTL(ctx context.Context) ([]string, error) {
	rdb := n.client()
	defer rdb.Close()
	var left []string
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		ttl, err := rdb.PTTL(ctx, iter.Val()).Result()
		if err != nil {
			return nil, err
		}
		if ttl == -1 {
			left = append(left, iter.Val())
		}
	}
	return left, iter.Err()
}

// redisVersion is redis-server's version line.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(out))
	if f := strings.Fields(s); len(f) > 2 {
		return strings.TrimPrefix(f[2], "v=")
	}
	return s
}
