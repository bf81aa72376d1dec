//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The command of lock runs under a reaper: redisync itself, started again
// with reaperEnv set, as the leader of a process group of its own, and
// the command as its child in that group. The reaper waits for the
// command and reports its status to lock through a pipe (its fd 3). When
// lock's process dies, by any signal, SIGKILL included, the reaper kills
// its whole group, the command and everything the command started in it,
// and itself:
//
//   - on Linux the kernel tells it at once (a parent-death signal, which
//     the reaper checks against its parent pid, as the signal also fires
//     when the thread that started it exits);
//   - on every system it also checks its parent pid every
//     orphanCheck, so a reaper that missed the signal (or a system
//     without one) kills the group within that time.
//
// Either way that is long before the lock can pass to anyone: the lock's
// lease has at least two thirds of --lease to run after its last renewal.
// Processes that leave the group (setsid, setpgid: daemons) are out of
// reach, as they are for timeout(1).
const reaperEnv = "REDISYNC_REAPER_PARENT"

// orphanCheck is how often a reaper checks that lock's process is alive.
const orphanCheck = 100 * time.Millisecond

// reaperStatusFD is the reaper's end of the status pipe.
const reaperStatusFD = 3

// reaping reports whether this process was started as a reaper.
func reaping() bool { return os.Getenv(reaperEnv) != "" }

// reap is the reaper's main: it runs argv and returns its exit code
// after writing the command's status (as lock reports it) to the status
// pipe.
func reap(argv []string) int {
	parent, _ := strconv.Atoi(os.Getenv(reaperEnv))
	_ = os.Unsetenv(reaperEnv)
	status := os.NewFile(reaperStatusFD, "status")
	syscall.CloseOnExec(reaperStatusFD) // the command does not inherit it
	// Signals lock passes on to the group reach the reaper too: they are
	// the command's, not the reaper's. A handler (not SIG_IGN) is reset by
	// exec, so the command gets them as usual.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	if len(argv) == 0 || os.Getppid() != parent {
		return exitFailure // lock died before the reaper could watch it
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "redisync lock: %v\n", err)
		code := exitCannotRun
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		fmt.Fprintf(status, "%d\n", code)
		return 0
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is in cmd.ProcessState
		close(exited)
	}()
	tick := time.NewTicker(orphanCheck)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			fmt.Fprintf(status, "%d\n", commandStatus(cmd.ProcessState))
			return 0
		case <-sigs:
		case <-tick.C:
		}
		if os.Getppid() != parent {
			// Orphaned: lock is gone, and with it the lock's renewals.
			_ = syscall.Kill(0, syscall.SIGKILL) // the group, the reaper included
		}
	}
}

// reaped is a command running under a reaper.
type reaped struct {
	cmd    *exec.Cmd
	group  int           // the process group: the reaper's pid
	code   int           // the command's status, valid after exited
	exited chan struct{} // closed once the reaper has exited
}

// startReaped starts argv under a reaper (see reaperEnv), with env added
// to redisync's environment.
func startReaped(out *output, argv []string, env string) (*reaped, error) {
	self, err := selfPath()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out.stdout, out.stderr
	cmd.Env = append(os.Environ(), env, reaperEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = reaperAttr()
	err = startPinned(cmd)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	p := &reaped{cmd: cmd, group: cmd.Process.Pid, code: -1, exited: make(chan struct{})}
	go p.watch(r)
	return p, nil
}

// watch reads the command's status, ends what is left of the group, and
// waits for the reaper. The group is killed before the reaper is waited
// for, so its id cannot have been reused.
func (p *reaped) watch(r *os.File) {
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if code, perr := strconv.Atoi(strings.TrimSpace(line)); err == nil && perr == nil {
		p.code = code
	}
	// The command has exited, or the reaper died without saying so (it was
	// killed): whatever the command left running in its group goes too,
	// before the lock is released.
	_ = syscall.Kill(-p.group, syscall.SIGKILL)
	_ = p.cmd.Wait()
	if p.code < 0 {
		p.code = commandStatus(p.cmd.ProcessState)
	}
	close(p.exited)
}

// signal sends s to the command's process group.
func (p *reaped) signal(s syscall.Signal) { _ = syscall.Kill(-p.group, s) }

// commandStatus is the exit code of a finished command, as a shell
// reports it.
func commandStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
