//go:build !unix

package main

import (
	"fmt"
	"time"
)

// supervise is unix-only: the command's process group and signals.
func supervise(out *output, _ *lockHold, _ []string, _ time.Duration, _ string) (code int, lost bool) {
	fmt.Fprintln(out.stderr, "redisync lock: runs commands on unix systems only")
	return exitCannotRun, false
}

// reaping is unix-only, as lock's commands are.
func reaping() bool { return false }

func reap([]string) int { return exitFailure }
