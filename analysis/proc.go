package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A proc is a process the harness started: a redis-server, the resource or
// a client. It dies with the harness (SIGKILL on the parent's death).
type proc struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has been waited for
	exitAt int64         // unix nanoseconds when it was seen to exit; valid after done
}

// startProc starts argv with stdout and stderr to out and env added to the
// harness's environment.
func startProc(name string, out io.Writer, env []string, argv ...string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.exitAt = time.Now().UnixNano()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process; nothing when it has exited.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// wait waits up to d for the process to exit.
func (p *proc) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// kill ends the process with SIGKILL (continuing it first, should it be
// stopped) and waits for it.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	p.signal(syscall.SIGCONT)
	<-p.done
}

// stop asks the process to end (SIGTERM), then kills it after grace.
func (p *proc) stop(grace time.Duration) {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	if !p.wait(grace) {
		p.kill()
	}
}
