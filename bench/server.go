package main

import (
	"context"
	"errors"
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

// serverEnv names the server binary to run, as in the main module's tests:
// redis-server by default, e.g. valkey-server for Valkey.
const serverEnv = "REDISYNC_SERVER"

// errNoServer reports that the server binary is not installed.
var errNoServer = errors.New("server binary not found")

// serverBin returns $REDISYNC_SERVER, or redis-server.
func serverBin() string {
	if v := os.Getenv(serverEnv); v != "" {
		return v
	}
	return "redis-server"
}

// server is one server process (serverBin) on a loopback port, with persistence
// off, in a temporary directory removed by stop.
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startServer runs the server binary on a free loopback port and returns
// once it answers PING. A port taken between choosing and binding it is
// retried.
func startServer(ctx context.Context) (*server, error) {
	name := serverBin()
	bin, err := exec.LookPath(name)
	if err != nil {
		hint := "Debian: apt-get install redis-server, or set " + serverEnv
		if os.Getenv(serverEnv) != "" {
			hint = serverEnv + "=" + name
		}
		return nil, fmt.Errorf("%w: %s is not on PATH (%s)", errNoServer, name, hint)
	}
	var lastErr error
	for range 3 {
		s, err := launch(ctx, bin)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launch(ctx context.Context, bin string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redisync-bench-")
	if err != nil {
		return nil, err
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, done: make(chan struct{})}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
		"--maxclients", "20000",
	)
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.ready(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		s.stop()
		return nil, fmt.Errorf("%s on %s: %w\n%s", bin, s.addr, err, log)
	}
	return s, nil
}

// ready waits until the server answers PING, for at most ten seconds. It
// waits for the port with plain dials first, so that go-redis does not log
// the refused connections of a server still starting.
func (s *server) ready(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return errors.New("exited during startup")
		default:
		}
		conn, err := net.DialTimeout("tcp", s.addr, 100*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr})
	defer rdb.Close()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // LOADING: still starting
	}
}

// stop kills the server, waits for it and removes its directory.
func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = os.RemoveAll(s.dir)
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverVersion names the server and version an INFO server reply
// describes: "valkey-server 8.0.1" (Valkey also reports a compatible
// redis_version, which is not its own) or "redis-server 7.0.15".
func serverVersion(info string) string {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if v := fields["valkey_version"]; v != "" {
		return "valkey-server " + v
	}
	if v := fields["redis_version"]; v != "" {
		return "redis-server " + v
	}
	return "server ?"
}
