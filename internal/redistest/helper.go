package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// HelperEnv names the helper a re-executed test binary runs (see
// HelperMain and StartHelper).
const HelperEnv = "REDISYNC_TEST_HELPER"

// HelperFunc is the body of a helper process. It talks to the test that
// started it through lines: it writes to stdout (see StartHelper's
// Helper.Next) and reads from in, which is closed when the test closes the
// helper's stdin or dies; ctx is cancelled at the same moment. Lines the
// helper leaves unread beyond a buffer of 64 are dropped. The returned
// error, if any, is printed to stderr and the process exits with status 1.
type HelperFunc func(ctx context.Context, args []string, in <-chan string) error

// HelperMain is Main for test binaries that double as helper processes.
// When the binary was started by StartHelper it runs the named helper and
// exits without running any test; otherwise it calls Main(m).
func HelperMain(m *testing.M, helpers map[string]HelperFunc) {
	name := os.Getenv(HelperEnv)
	if name == "" {
		Main(m)
		return
	}
	f := helpers[name]
	if f == nil {
		fmt.Fprintf(os.Stderr, "redistest: unknown helper %q\n", name)
		os.Exit(2)
	}
	var args []string
	for i, a := range os.Args {
		if a == "--" {
			args = os.Args[i+1:]
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan string, 64)
	go func() {
		defer close(in)
		defer cancel()
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			select {
			case in <- sc.Text():
			default: // the helper does not read its input
			}
		}
	}()
	if err := f(ctx, args, in); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Helper is a running helper process: the test binary re-executed by
// StartHelper.
type Helper struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout, line by line; closed at EOF
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, valid after done
	stderr *strings.Builder

	killOnce sync.Once
}

// StartHelper runs this test binary again as the helper called name (which
// the binary's TestMain must pass to HelperMain) with args. The process is
// in its own process group, is SIGKILLed if the test binary dies (Linux),
// and is killed and waited for when t ends.
func StartHelper(t testing.TB, name string, args ...string) *Helper {
	t.Helper()
	argv := append([]string{"-test.run=^$", "--"}, args...)
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), HelperEnv+"="+name)
	cmd.SysProcAttr = sysProcAttr()
	h := &Helper{name: name, cmd: cmd, lines: make(chan string, 64), done: make(chan struct{}), stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{w: h.stderr}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("redistest: helper %s: %v", name, err)
	}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatalf("redistest: helper %s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start helper %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.err = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(h.Kill)
	return h
}

// Pid returns the helper's process id.
func (h *Helper) Pid() int { return h.cmd.Process.Pid }

// Next returns the helper's next line of output. It fails t when none comes
// within the given time or the helper exits first.
func (h *Helper) Next(t testing.TB, within time.Duration) string {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case line, ok := <-h.lines:
		if !ok {
			<-h.done
			t.Fatalf("redistest: helper %s exited (%v) before writing a line; stderr:\n%s", h.name, h.err, h.Stderr())
		}
		return line
	case <-timer.C:
		t.Fatalf("redistest: helper %s wrote no line within %v; stderr:\n%s", h.name, within, h.Stderr())
		return ""
	}
}

// Lines returns the helper's output, line by line; the channel is closed
// when the helper's stdout ends. Use either Lines or Next, not both at once.
func (h *Helper) Lines() <-chan string { return h.lines }

// Send writes one line to the helper's stdin.
func (h *Helper) Send(line string) error {
	_, err := io.WriteString(h.stdin, line+"\n")
	return err
}

// Kill sends SIGKILL to the helper's process group and waits until it has
// exited and its output is drained. It is idempotent.
func (h *Helper) Kill() {
	h.killOnce.Do(func() {
		_ = killProcess(h.cmd.Process)
		_ = h.stdin.Close()
		for range h.lines {
			// Drain, so that the reader reaches EOF and waits the process.
		}
		<-h.done
	})
}

// Done is closed when the helper process has exited.
func (h *Helper) Done() <-chan struct{} { return h.done }

// Stderr returns what the helper wrote to stderr so far.
func (h *Helper) Stderr() string {
	lw := h.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return h.stderr.String()
}

// lockedWriter lets Stderr read what exec's copying goroutine writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
