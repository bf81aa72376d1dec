//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// forwarded are the signals lock passes on to the command's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// supervise runs argv under a reaper (see reaperEnv), in a process group
// of its own, while h is held, passing on the signals redisync receives,
// and stops it when h (what, for messages) ends first: SIGTERM, then SIGKILL after grace. It
// returns the command's exit code (128 + N when it died of signal N) and
// whether h was lost.
func supervise(out *output, h *lockHold, argv []string, grace time.Duration, what string) (code int, lost bool) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	p, err := startReaped(out, argv, h.env)
	if err != nil {
		fmt.Fprintf(out.stderr, "redisync lock: %v\n", err)
		return exitCannotRun, false
	}
	gone, stop := h.watch()
	defer stop()
	var kill <-chan time.Time
	for {
		select {
		case <-p.exited:
			return p.code, lost
		case s := <-sigs:
			p.signal(s.(syscall.Signal))
		case <-gone:
			lost, gone = true, nil
			fmt.Fprintf(out.stderr, "redisync lock: %s was lost: sending the command SIGTERM, SIGKILL in %v\n", what, grace)
			p.signal(syscall.SIGTERM)
			timer := time.NewTimer(grace)
			defer timer.Stop()
			kill = timer.C
		case <-kill:
			kill = nil
			p.signal(syscall.SIGKILL)
		}
	}
}

// heldCheck is how often lock asks Redis whether it still holds, so that
// a forced unlock stops the command within about that, not at the next
// renewal (a third of --lease).
const heldCheck = time.Second

// watch returns a channel that is closed when the hold ends: Done closes
// (the watchdog saw the loss) or h.held finds it gone. stop ends the
// watching and waits for it.
func (h *lockHold) watch() (gone <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(heldCheck)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.done:
				close(ch)
				return
			case <-tick.C:
			}
			if h.held == nil {
				continue
			}
			cctx, ccancel := context.WithTimeout(ctx, heldCheck)
			held, err := h.held(cctx)
			ccancel()
			if err == nil && !held {
				close(ch)
				return
			}
		}
	}()
	return ch, func() { cancel(); <-finished }
}
