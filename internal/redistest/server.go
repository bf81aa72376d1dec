package redistest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// readyTimeout bounds how long one redis-server start may take to answer.
	readyTimeout = 10 * time.Second
	// startAttempts is how many fresh ports Start tries when bind fails.
	startAttempts = 5
	// restartBindWindow is how long Restart keeps retrying the old port.
	restartBindWindow = 5 * time.Second
	// opTimeout bounds every control command sent to a server.
	opTimeout = 5 * time.Second
	// pollInterval is the pause between readiness probes.
	pollInterval = 20 * time.Millisecond
	// logTail is how much of a log file goes into a failure message.
	logTail = 4096
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skip into a test failure when set to "1".
const RequireEnv = "REDISYNC_REQUIRE_REDIS"

// Server is one server process (ServerBin: redis-server by default)
// listening on 127.0.0.1. Its binary, port, directory and arguments never
// change, so Restart brings it back on the same address.
type Server struct {
	bin     string // the server binary, chosen at the first start
	port    int
	busPort int // cluster bus port; 0 for a standalone server
	dir     string
	ownDir  bool // dir is removed by close (not a t.TempDir)
	extra   []string
	pre     []string // arguments before the options, e.g. a config file
	logPath string
	outPath string

	mu   sync.Mutex // serialises Stop/Shutdown/Restart and guards proc
	proc *process   // nil while stopped
}

// process is one run of the server binary.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait result, valid after done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start runs a new server (ServerBin) on a free loopback port with persistence
// disabled, a t.TempDir() working directory and a log file in it, followed by
// args (e.g. "--maxmemory", "10mb"; do not pass --port, --bind or --dir). It
// returns once the server answers PING and registers a cleanup that kills it
// and waits for it to exit.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	s, err := startServer(t.TempDir(), false, false, args)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.close)
	return s
}

// startServer creates and starts a Server, trying fresh ports when the chosen
// one turns out to be taken. On failure the server is closed (which removes
// dir if ownDir).
func startServer(dir string, ownDir, cluster bool, extra []string) (*Server, error) {
	s := &Server{
		bin:     ServerBin(),
		dir:     dir,
		ownDir:  ownDir,
		extra:   append([]string(nil), extra...),
		logPath: filepath.Join(dir, "redis.log"),
		outPath: filepath.Join(dir, "stdout.log"),
	}
	var lastErr error
	for range startAttempts {
		var err error
		if s.port, err = freePort(); err != nil {
			lastErr = err
			break
		}
		if cluster {
			if s.busPort, err = freePort(); err != nil {
				lastErr = err
				break
			}
			if s.busPort == s.port {
				continue
			}
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
	s.close()
	return nil, lastErr
}

// freePort asks the kernel for an unused loopback port. The port is released
// again before redis-server binds it, so callers must cope with losing it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	return port, nil
}

func (s *Server) args() []string {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", s.logPath,
	}
	if s.busPort != 0 {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(s.busPort),
		)
	}
	return append(append(append([]string(nil), s.pre...), args...), s.extra...)
}

// launchLocked starts s.bin and waits until it answers. bindFailed reports
// that it exited because a port was taken. s.mu must be held and s.proc must
// be nil.
func (s *Server) launchLocked() (bindFailed bool, err error) {
	bin, err := exec.LookPath(s.bin)
	if err != nil {
		return false, err
	}
	logOff, outOff := fileSize(s.logPath), fileSize(s.outPath)
	out, err := os.OpenFile(s.outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	cmd := exec.Command(bin, s.args()...)
	cmd.Dir = s.dir
	// Both are *os.File, so exec starts no copying goroutines.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = out.Close() // the child holds its own descriptor
	if err != nil {
		return false, fmt.Errorf("start %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	fail := func(what string, logs string) error {
		return fmt.Errorf("%s on %s (pid %d, dir %s): %s\n%s",
			s.bin, s.Addr(), cmd.Process.Pid, s.dir, what, logs)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		if p.exited() {
			logs := s.logs(logOff, outOff)
			return strings.Contains(logs, "Address already in use"),
				fail(fmt.Sprintf("exited during startup: %v", p.err), logs)
		}
		probeErr := probe(s.Addr(), cmd.Process.Pid)
		if probeErr == nil {
			s.proc = p
			return false, nil
		}
		if time.Now().After(deadline) {
			_ = killProcess(cmd.Process)
			<-p.done
			return false, fail(fmt.Sprintf("not ready after %v: %v", readyTimeout, probeErr),
				s.logs(logOff, outOff))
		}
		time.Sleep(pollInterval)
	}
}

// probe checks that the server on addr answers PING and is the process pid
// (and not some other process that grabbed the port first).
func probe(addr string, pid int) error {
	c, err := dialRESP(addr, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.do("PING")
	if err != nil {
		return err
	}
	if v != "PONG" {
		return fmt.Errorf("PING replied %v", v)
	}
	v, err = c.do("INFO", "server")
	if err != nil {
		return err
	}
	info, _ := v.(string)
	got, _ := infoField(info, "process_id")
	if got != strconv.Itoa(pid) {
		return fmt.Errorf("%s is served by process_id %q, not %d", addr, got, pid)
	}
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logs renders what the server wrote since the given offsets.
func (s *Server) logs(logOff, outOff int64) string {
	return fmt.Sprintf("--- %s ---\n%s--- %s ---\n%s",
		s.logPath, readTail(s.logPath, logOff), s.outPath, readTail(s.outPath, outOff))
}

func readTail(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer f.Close()
	if size := fileSize(path); size-off > logTail {
		off = size - logTail
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	if len(b) == 0 {
		return "(empty)\n"
	}
	if b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return string(b)
}

// Addr returns "127.0.0.1:<port>".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory (holds redis.log).
func (s *Server) Dir() string { return s.dir }

// Pid returns the pid of the running server process, or 0 after Stop or
// Shutdown. A process that died on its own keeps its pid until Stop.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// NewClient returns a go-redis client for the server, closed when t ends.
// mod functions may adjust the options before the client is created.
func (s *Server) NewClient(t testing.TB, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: s.Addr()}
	for _, f := range mod {
		f(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Stop kills the server with SIGKILL and waits for it to exit. It is
// idempotent and safe to call concurrently.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

// Kill is an alias of Stop.
func (s *Server) Kill() { s.Stop() }

func (s *Server) stopLocked() {
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	if !p.exited() {
		_ = killProcess(p.cmd.Process)
	}
	<-p.done
}

// Shutdown asks the server to exit with SHUTDOWN NOSAVE on a fresh
// connection and waits for it to exit; if it does not exit in time it is
// killed. It is a no-op when the server is not running.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	// A successful SHUTDOWN has no reply: the connection just closes.
	_, _ = command(s.Addr(), opTimeout, "SHUTDOWN", "NOSAVE")
	select {
	case <-p.done:
	case <-time.After(readyTimeout):
	}
	s.stopLocked()
}

// Restart stops the server if it is running and starts it again on the same
// port with the same arguments and directory, waiting until it answers. Bind
// failures are retried for a few seconds. Data is lost (no persistence),
// except that a cluster node keeps its identity through nodes.conf.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.restart(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	deadline := time.Now().Add(restartBindWindow)
	for {
		bindFailed, err := s.launchLocked()
		if err == nil {
			return nil
		}
		if !bindFailed || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Flush runs FLUSHALL on the server.
func (s *Server) Flush(t testing.TB) {
	t.Helper()
	if _, err := command(s.Addr(), opTimeout, "FLUSHALL"); err != nil {
		t.Fatalf("redistest: FLUSHALL on %s: %v", s.Addr(), err)
	}
}

// ClientCount returns how many connections of the given CLIENT LIST type
// ("normal", "pubsub", "replica", "master") the server has. The connection
// used to ask is of type normal and is counted for "normal".
func (s *Server) ClientCount(t testing.TB, typ string) int {
	t.Helper()
	list, err := commandString(s.Addr(), opTimeout, "CLIENT", "LIST", "TYPE", typ)
	if err != nil {
		t.Fatalf("redistest: CLIENT LIST TYPE %s on %s: %v", typ, s.Addr(), err)
	}
	return countLines(list)
}

// close stops the server for good and removes a directory it created.
func (s *Server) close() {
	s.Stop()
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
}

// ClientCount returns how many connections of the given CLIENT LIST type
// ("normal", "pubsub", ...; "" counts all) the server(s) behind rdb have. For a
// *redis.ClusterClient or *redis.Ring the counts of all known nodes are
// summed. The connection rdb uses to ask is of type normal, so it is counted
// for "normal". Note that pub/sub connections are only of type "pubsub" while
// they are subscribed to at least one channel or pattern.
func ClientCount(t testing.TB, rdb redis.UniversalClient, typ string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	args := []any{"CLIENT", "LIST"}
	if typ != "" {
		args = append(args, "TYPE", typ)
	}
	count := func(ctx context.Context, c interface {
		Do(context.Context, ...any) *redis.Cmd
	}) (int, error) {
		list, err := c.Do(ctx, args...).Text()
		if err != nil {
			return 0, err
		}
		return countLines(list), nil
	}
	type sharded interface {
		ForEachShard(context.Context, func(context.Context, *redis.Client) error) error
	}
	if sc, ok := rdb.(sharded); ok {
		var mu sync.Mutex
		total := 0
		err := sc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			n, err := count(ctx, c)
			mu.Lock()
			total += n
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatalf("redistest: CLIENT LIST TYPE %s: %v", typ, err)
		}
		return total
	}
	n, err := count(ctx, rdb)
	if err != nil {
		t.Fatalf("redistest: CLIENT LIST TYPE %s: %v", typ, err)
	}
	return n
}

func countLines(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}
