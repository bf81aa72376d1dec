package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// NutcrackerEnv names the twemproxy binary the helpers start; the default
// is "nutcracker" (the Debian package of that name, 0.5.0 in bookworm).
const NutcrackerEnv = "REDISYNC_NUTCRACKER"

// Nutcracker is a twemproxy process on a loopback port in front of one
// server: a proxy that forwards scripts with keys but refuses SUBSCRIBE,
// SCRIPT LOAD, bare TIME, INFO, HELLO, EVALSHA without keys and every
// other command it does not know, by closing the client's connection.
type Nutcracker struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
	log  string // its log file
	dir  string // removed by Close (LaunchNutcracker)
}

// StartNutcracker starts nutcracker on a free loopback port with a
// generated configuration whose one server is s, and returns once a PING
// passes through it. It is killed, and waited for, when t ends. Without
// the binary it skips t, or fails it under REDISYNC_REQUIRE_REDIS=1.
func StartNutcracker(t testing.TB, s *Server) *Nutcracker {
	t.Helper()
	bin := NutcrackerBin()
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redistest: %s=1 but %s is not found; install the Debian package nutcracker or set %s", RequireEnv, bin, NutcrackerEnv)
		}
		t.Skipf("%s not installed; install the Debian package nutcracker or set %s (proxy tests)", bin, NutcrackerEnv)
	}
	n, err := launchNutcracker(bin, t.TempDir(), s.Addr())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			// Which commands it refused, and when it closed connections.
			t.Logf("nutcracker log:\n%s", readTail(n.log, 0))
		}
	})
	return n
}

// NutcrackerBin returns the twemproxy binary the helpers start:
// $REDISYNC_NUTCRACKER, or nutcracker.
func NutcrackerBin() string { return envOr(NutcrackerEnv, "nutcracker") }

// LaunchNutcracker is StartNutcracker for a program (the bench module):
// nutcracker in front of server ("host:port" on loopback), in a directory
// of its own that Close removes.
func LaunchNutcracker(server string) (*Nutcracker, error) {
	dir, err := os.MkdirTemp("", "redistest-nutcracker-")
	if err != nil {
		return nil, err
	}
	n, err := launchNutcracker(NutcrackerBin(), dir, server)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	n.dir = dir
	return n, nil
}

// Close stops a nutcracker of LaunchNutcracker and removes its directory.
func (n *Nutcracker) Close() {
	n.stop()
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
}

// launchNutcracker starts bin with a configuration in dir, trying fresh
// ports when the chosen one turns out to be taken.
func launchNutcracker(bin, dir, server string) (*Nutcracker, error) {
	var lastErr error
	for range startAttempts {
		n, err := launchNutcrackerOnce(bin, dir, server)
		if err == nil {
			return n, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launchNutcrackerOnce(bin, dir, server string) (*Nutcracker, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// One pool, one server: every key goes to it. The server's weight
	// is 1; a server that fails is not ejected (the tests restart none).
	conf := fmt.Sprintf("redisync:\n  listen: 127.0.0.1:%d\n  redis: true\n  hash: fnv1a_64\n  distribution: ketama\n  auto_eject_hosts: false\n  timeout: 10000\n  servers:\n   - %s:1\n", port, server)
	path := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, "nutcracker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// -s 0 would still bind the stats port: give it a free one too.
	stats, err := freePort()
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	cmd := exec.Command(bin, "-c", path, "-s", strconv.Itoa(stats), "-a", "127.0.0.1", "-o", filepath.Join(dir, "nutcracker.log"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = log.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	n := &Nutcracker{port: port, cmd: cmd, done: make(chan struct{}), log: filepath.Join(dir, "nutcracker.log")}
	go func() {
		_ = cmd.Wait()
		close(n.done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-n.done:
			tail := readTail(filepath.Join(dir, "nutcracker.log"), 0)
			return nil, fmt.Errorf("%s exited during startup (port %d taken?):\n%s", bin, port, tail)
		default:
		}
		c, err := dialRESP(n.Addr(), 250*time.Millisecond)
		if err == nil {
			v, perr := c.do("PING")
			_ = c.Close()
			if perr == nil && v == "PONG" {
				return n, nil
			}
			err = fmt.Errorf("PING through the proxy: %v %v", v, perr)
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("%s on port %d not ready after %v: %v", bin, port, readyTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// Addr is the proxy's address.
func (n *Nutcracker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

func (n *Nutcracker) stop() {
	_ = killProcess(n.cmd.Process)
	<-n.done
}

// NewClient returns a go-redis client that talks to the server through the
// proxy, closed when t ends; mod functions may adjust the options.
//
// go-redis v9 sends HELLO and CLIENT SETINFO on every new connection and
// gives the connection up when the server closes it instead of refusing
// the command (go-redis issue 2616), which is what twemproxy does. The
// client is set up as a user behind twemproxy must set theirs: without
// CLIENT SETINFO (DisableIdentity), and with a dialer that answers HELLO
// itself with the error an old server gives (see HelloAnswering), so that
// go-redis goes on in RESP2.
func (n *Nutcracker) NewClient(t testing.TB, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true, Dialer: HelloAnswering(nil)}
	for _, f := range mod {
		f(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// HelloAnswering returns a go-redis Dialer that dials with dial (a plain
// TCP dial when nil) and answers the HELLO that go-redis writes on a new
// connection with "ERR unknown command" itself, without sending it: a
// proxy that closes the connection on HELLO (twemproxy) then serves the
// client in RESP2.
func HelloAnswering(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &helloConn{Conn: c}, nil
	}
}

// helloConn is a connection whose HELLO commands are answered locally.
type helloConn struct {
	net.Conn
	mu      sync.Mutex // guards owed
	owed    []byte     // replies to commands answered here, not yet read
	settled bool       // past the handshake: HELLO comes first or never
}

var helloCmd = []byte("$5\r\nhello\r\n")

func (c *helloConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.settled {
		c.settled = true
		// go-redis writes HELLO alone, first: "*N\r\n$5\r\nhello\r\n...".
		if i := bytes.IndexByte(p, '\n'); p[0] == '*' && i > 0 && bytes.HasPrefix(bytes.ToLower(p[i+1:]), helloCmd) {
			c.owed = append(c.owed, "-ERR unknown command 'HELLO'\r\n"...)
			c.mu.Unlock()
			return len(p), nil
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *helloConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.owed) > 0 {
		n := copy(p, c.owed)
		c.owed = c.owed[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}
