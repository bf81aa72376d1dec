//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// forwarded are the signals lock passes on to the command's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// supervise runs argv in a process group of its own while h is held,
// passing on the signals redisync receives, and stops it when h ends
// first: SIGTERM, then SIGKILL after grace. It returns the command's exit
// code (128 + N when it died of signal N) and whether h was lost.
func supervise(out *output, h *lockHold, argv []string, grace time.Duration) (code int, lost bool) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out.stdout, out.stderr
	cmd.Env = append(os.Environ(), h.env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out.stderr, "redisync lock: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound, false
		}
		return exitCannotRun, false
	}
	group := -cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is in cmd.ProcessState
		close(exited)
	}()
	done := h.done
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			return status(cmd.ProcessState), lost
		case s := <-sigs:
			_ = syscall.Kill(group, s.(syscall.Signal))
		case <-done:
			lost, done = true, nil
			fmt.Fprintf(out.stderr, "redisync lock: the lock was lost: sending the command SIGTERM, SIGKILL in %v\n", grace)
			_ = syscall.Kill(group, syscall.SIGTERM)
			timer := time.NewTimer(grace)
			defer timer.Stop()
			kill = timer.C
		case <-kill:
			kill = nil
			_ = syscall.Kill(group, syscall.SIGKILL)
		}
	}
}

// status is the exit code of a finished command, as a shell reports it.
func status(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
