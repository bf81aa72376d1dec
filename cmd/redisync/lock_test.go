//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// lockedBuffer is an output a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// running is a redisync lock started in the test's process.
type running struct {
	stdout, stderr *lockedBuffer
	code           chan int
}

func startLock(t *testing.T, args ...string) *running {
	r := &running{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, code: make(chan int, 1)}
	go func() { r.code <- run(context.Background(), append([]string{"lock"}, args...), r.stdout, r.stderr) }()
	t.Cleanup(func() {
		select {
		case <-r.code:
		case <-time.After(20 * time.Second):
			t.Errorf("redisync lock %v still running", args)
		}
	})
	return r
}

// says waits until the command has written s.
func (r *running) says(t *testing.T, s string) {
	t.Helper()
	redistest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(r.stdout.String(), s) })
}

func (r *running) exit(t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		r.code <- c
		return c
	case <-time.After(15 * time.Second):
		t.Fatalf("redisync lock did not exit; stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		return 0
	}
}

// The command runs with the lock's fencing token, redisync exits with its
// status and the lock is free again; a command that does not exist is
// 127.
func TestLockRunsCommand(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	rdb := srv.NewClient(t)
	for _, fair := range []bool{false, true} {
		name := redistest.UniqueName(t)
		args := []string{"lock", "--redis", url}
		if fair {
			args = append(args, "--fair")
		}
		code, stdout, stderr := runCmd(t, append(args, name, "--", "sh", "-c", `echo "token=$REDISYNC_TOKEN"; exit 7`)...)
		if code != 7 {
			t.Fatalf("fair %v: exit code %d, want the command's 7; stderr:\n%s", fair, code, stderr)
		}
		m := regexp.MustCompile(`token=(\d+)`).FindStringSubmatch(stdout)
		if m == nil || m[1] == "0" {
			t.Errorf("fair %v: the command did not see a token: %q", fair, stdout)
		}
		if locked, err := rlock.New(rdb, name).IsLocked(t.Context()); locked || err != nil {
			t.Errorf("fair %v: the lock is still held after the command exited (%v)", fair, err)
		}
	}
	code, _, stderr := runCmd(t, "lock", "--redis", url, redistest.UniqueName(t), "--", "redisync-no-such-command")
	if code != exitNotFound || !strings.Contains(stderr, "redisync-no-such-command") {
		t.Errorf("a command that does not exist: exit code %d, want %d; stderr:\n%s", code, exitNotFound, stderr)
	}
}

// A second lock of the same name waits for the first command to end; with
// --wait it gives up with code 75.
func TestLockWaits(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	name := redistest.UniqueName(t)
	first := startLock(t, "--redis", url, name, "--", "sh", "-c", "echo started; sleep 1; echo done")
	first.says(t, "started")
	start := time.Now()
	code, _, stderr := runCmd(t, "lock", "--redis", url, "--wait", "300ms", name, "--", "echo", "ran")
	if took := time.Since(start); code != exitWaitRanOut || !strings.Contains(stderr, "--wait 300ms ran out") || took > 900*time.Millisecond {
		t.Errorf("lock --wait 300ms on a held lock: exit code %d after %v, want %d at once; stderr:\n%s", code, took, exitWaitRanOut, stderr)
	}
	second := startLock(t, "--redis", url, name, "--", "echo", "second ran")
	second.says(t, "second ran")
	if !strings.Contains(first.stdout.String(), "done") {
		t.Errorf("the second command ran before the first ended")
	}
	if c := first.exit(t); c != 0 {
		t.Errorf("first: exit code %d", c)
	}
	if c := second.exit(t); c != 0 {
		t.Errorf("second: exit code %d", c)
	}
}

// A lock force-unlocked while the command runs: the command gets SIGTERM
// within the watchdog's period, and redisync exits with code 76; one that
// ignores SIGTERM gets SIGKILL after --grace.
func TestLockLostStopsCommand(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	rdb := srv.NewClient(t)
	const lease = 900 * time.Millisecond // renewed every 300ms
	for _, tc := range []struct {
		name, script string
		grace        time.Duration
		says         string
	}{
		{"term", `trap 'echo got TERM; exit 3' TERM; echo started; while :; do sleep 0.05; done`, 5 * time.Second, "got TERM"},
		{"kill", `trap '' TERM; echo started; sleep 30`, 500 * time.Millisecond, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			r := startLock(t, "--redis", url, "--lease", lease.String(), "--grace", tc.grace.String(), name, "--", "sh", "-c", tc.script)
			r.says(t, "started")
			forced := time.Now()
			if ok, err := rlock.New(rdb, name).ForceUnlock(t.Context()); !ok || err != nil {
				t.Fatalf("ForceUnlock = %v, %v", ok, err)
			}
			if tc.says != "" {
				r.says(t, tc.says)
				took := time.Since(forced)
				t.Logf("the command got SIGTERM %v after the ForceUnlock", took)
				if took > lease {
					t.Errorf("the command got SIGTERM %v after the ForceUnlock, want within the watchdog's period (%v)", took, lease/3)
				}
			}
			if c := r.exit(t); c != exitLockLost {
				t.Errorf("exit code %d, want %d; stderr:\n%s", c, exitLockLost, r.stderr)
			}
			if took := time.Since(forced); took < tc.grace && tc.says == "" || took > tc.grace+lease+2*time.Second {
				t.Errorf("redisync exited %v after the ForceUnlock, with --grace %v", took, tc.grace)
			}
			if !strings.Contains(r.stderr.String(), "lost") {
				t.Errorf("stderr does not say the lock was lost:\n%s", r.stderr)
			}
		})
	}
}

// A forced unlock stops the command within a second or two, also with the
// default lease, whose renewals (every 10s) would see it much later.
func TestLockForcedUnlockStopsCommandPromptly(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	rdb := srv.NewClient(t)
	for _, permits := range []bool{false, true} {
		name := redistest.UniqueName(t)
		args := []string{"--redis", url}
		if permits {
			args = append(args, "--permits", "1")
		}
		r := startLock(t, append(args, name, "--", "sh", "-c", `trap 'echo got TERM; exit 3' TERM; echo started; while :; do sleep 0.05; done`)...)
		r.says(t, "started")
		forced := time.Now()
		if permits {
			mustOK(t, rdb.Del(t.Context(), "redisync:{"+name+"}").Err()) // the permits' sorted set
		} else if ok, err := rlock.New(rdb, name).ForceUnlock(t.Context()); !ok || err != nil {
			t.Fatalf("ForceUnlock = %v, %v", ok, err)
		}
		r.says(t, "got TERM")
		if took := time.Since(forced); took > 2*time.Second {
			t.Errorf("permits %v: the command got SIGTERM %v after the forced unlock, want within 2s", permits, took)
		}
		if c := r.exit(t); c != exitLockLost {
			t.Errorf("permits %v: exit code %d, want %d; stderr:\n%s", permits, c, exitLockLost, r.stderr)
		}
		want := fmt.Sprintf("the lock %q was lost", name)
		if permits {
			want = fmt.Sprintf("a permit of semaphore %q was lost", name)
		}
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
}

// --permits 2 lets two commands run at once, never three.
func TestLockPermits(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	name := redistest.UniqueName(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`touch %[1]s/$$; echo "n=$(ls %[1]s | wc -l)"; sleep 0.5; rm %[1]s/$$`, dir)
	var rs []*running
	start := time.Now()
	for range 3 {
		rs = append(rs, startLock(t, "--redis", url, "--permits", "2", name, "--", "sh", "-c", script))
	}
	most := 0
	for _, r := range rs {
		if c := r.exit(t); c != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", c, r.stderr)
		}
		m := regexp.MustCompile(`n=\s*(\d+)`).FindStringSubmatch(r.stdout.String())
		if m == nil {
			t.Fatalf("no count in %q", r.stdout)
		}
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	if most != 2 {
		t.Errorf("at most %d commands ran at once, want 2", most)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("three commands of 0.5s with two permits took %v, want two rounds", took)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in %s: %v", dir, entries)
	}
}

// --permits N gives a semaphore N permits only when it has none: a
// semaphore set to 3 stays at 3, and the run says so.
func TestLockPermitsKeepTotal(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	rdb := srv.NewClient(t)
	name := redistest.UniqueName(t)
	total := func() int64 {
		t.Helper()
		n, err := rdb.Get(t.Context(), keyspace.NewNames(name).Sub("permits")).Int64()
		mustOK(t, err)
		return n
	}
	mustRun(t, 0, "lock", "--redis", url, "--permits", "2", name, "--", "true")
	if n := total(); n != 2 {
		t.Fatalf("a new semaphore got %d permits from --permits 2", n)
	}
	mustOK(t, semaphore.NewLeased(rdb, name).SetPermits(t.Context(), 3))
	_, stderr := mustRun(t, 0, "lock", "--redis", url, "--permits", "10", name, "--", "true")
	if n := total(); n != 3 {
		t.Errorf("lock --permits 10 on a semaphore of 3 left it at %d", n)
	}
	if !strings.Contains(stderr, "has 3 permits in all, not 10") {
		t.Errorf("lock --permits 10 on a semaphore of 3 does not say so:\n%s", stderr)
	}
}

// Signals sent to redisync reach the command; a SIGTERM that ends the
// command ends redisync with the command's status, and frees the lock.
func TestLockForwardsSignals(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	h := redistest.StartHelper(t, "redisync", "lock", "--redis", "redis://"+srv.Addr(), name, "--", "sh", "-c",
		`trap 'echo got USR1' USR1; trap 'echo got TERM; exit 5' TERM; echo started; while :; do sleep 0.05; done`)
	next := func(want string) {
		t.Helper()
		if line := h.Next(t, 10*time.Second); line != want {
			t.Fatalf("line %q, want %q; stderr:\n%s", line, want, h.Stderr())
		}
	}
	next("started")
	mustOK(t, syscall.Kill(h.Pid(), syscall.SIGUSR1))
	next("got USR1")
	mustOK(t, syscall.Kill(h.Pid(), syscall.SIGTERM))
	next("got TERM")
	next("redisync exit 5")
	if locked, err := rlock.New(srv.NewClient(t), name).IsLocked(t.Context()); locked || err != nil {
		t.Errorf("the lock is still held after redisync exited (%v)", err)
	}
}

// --wait bounds the whole command, the connection check included: against
// a server that does not answer (SIGSTOP), lock --wait gives up at its
// deadline with code 75.
func TestLockWaitBoundsConnecting(t *testing.T) {
	srv := redistest.Start(t)
	mustOK(t, syscall.Kill(srv.Pid(), syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
	start := time.Now()
	code, _, stderr := runCmd(t, "lock", "--redis", "redis://"+srv.Addr(), "--wait", "1s", redistest.UniqueName(t), "--", "echo", "ran")
	if took := time.Since(start); code != exitWaitRanOut || took > 1500*time.Millisecond {
		t.Errorf("lock --wait 1s on a stopped server: exit code %d after %v, want %d within 1.5s; stderr:\n%s", code, took, exitWaitRanOut, stderr)
	}
}

// SIGINT or SIGTERM while lock waits ends it with 128 + the signal's
// number, as a shell reports it; the command does not run.
func TestLockInterruptedWhileWaiting(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		name := redistest.UniqueName(t)
		holder := startLock(t, "--redis", url, name, "--", "sh", "-c", "echo started; sleep 2")
		holder.says(t, "started")
		h := redistest.StartHelper(t, "redisync", "lock", "--redis", url, name, "--", "echo", "ran")
		time.Sleep(300 * time.Millisecond) // waiting
		mustOK(t, syscall.Kill(h.Pid(), sig))
		want := fmt.Sprintf("redisync exit %d", 128+int(sig))
		if line := h.Next(t, 5*time.Second); line != want {
			t.Errorf("%v while waiting: %q, want %q; stderr:\n%s", sig, line, want, h.Stderr())
		}
		if c := holder.exit(t); c != 0 {
			t.Errorf("holder: exit code %d", c)
		}
	}
}

// A redisync lock that gives up its wait (--wait ran out, or SIGINT) and
// exits leaves nothing in line: the next waiter holds the lock within
// 300ms of the holder's release, not when the dead waiter's place lapses.
func TestLockGivenUpLeavesNothingInLine(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	for _, tc := range []struct {
		name string
		args []string
		stop func(h *redistest.Helper)
		code int
	}{
		{"wait", []string{"--wait", "1s"}, func(*redistest.Helper) {}, exitWaitRanOut},
		{"sigint", nil, func(h *redistest.Helper) { mustOK(t, syscall.Kill(h.Pid(), syscall.SIGINT)) }, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			name := redistest.UniqueName(t)
			holder := rlock.New(srv.NewClient(t), name)
			mustOK(t, holder.Lock(ctx))
			args := append(append([]string{"lock", "--redis", url}, tc.args...), name, "--", "echo", "ran")
			h := redistest.StartHelper(t, "redisync", args...)
			time.Sleep(500 * time.Millisecond) // in line
			tc.stop(h)
			want := fmt.Sprintf("redisync exit %d", tc.code)
			if line := h.Next(t, 5*time.Second); line != want {
				t.Fatalf("%q, want %q; stderr:\n%s", line, want, h.Stderr())
			}
			next := rlock.New(srv.NewClient(t), name)
			got := make(chan time.Time, 1)
			go func() {
				if err := next.Lock(ctx); err != nil {
					t.Error(err)
				}
				got <- time.Now()
			}()
			time.Sleep(200 * time.Millisecond) // in line behind whatever is left
			mustOK(t, holder.Unlock(ctx))
			released := time.Now()
			select {
			case at := <-got:
				if took := at.Sub(released); took > 300*time.Millisecond {
					t.Errorf("the next waiter held the lock %v after the release, want within 300ms", took)
				}
				mustOK(t, next.Unlock(ctx))
			case <-time.After(10 * time.Second):
				t.Fatal("the next waiter did not get the lock")
			}
		})
	}
}
