package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// groupAlive returns the live (not zombie) processes of process group
// group, from /proc.
func groupAlive(t *testing.T, group int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, not ")".
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if pgrp, _ := strconv.Atoi(fields[2]); pgrp == group {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill -9 of redisync lock ends its command's whole process group (sh and
// the sleep it started) within a second, and a second redisync lock waiting
// for the lock runs its command only after that.
func TestLockKilledEndsCommand(t *testing.T) {
	srv := redistest.SharedServer(t)
	url := "redis://" + srv.Addr()
	name := redistest.UniqueName(t)
	h := redistest.StartHelper(t, "redisync", "lock", "--redis", url, "--lease", "3s", name, "--", "sh", "-c", `echo "pid $$"; sleep 30; echo "sleep ended"`)
	line := h.Next(t, 10*time.Second)
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "pid "))
	if err != nil {
		t.Fatalf("first line %q, want the command's pid", line)
	}
	group, err := syscall.Getpgid(pid)
	mustOK(t, err)
	if group == h.Pid() || group == syscall.Getpgrp() {
		t.Fatalf("the command runs in redisync's process group %d", group)
	}
	// sh and its sleep (and the reaper).
	redistest.WaitFor(t, 5*time.Second, func() bool { return len(groupAlive(t, group)) >= 2 })
	mustOK(t, syscall.Kill(h.Pid(), syscall.SIGKILL))
	killed := time.Now()
	second := startLock(t, "--redis", url, "--wait", "10s", name, "--", "echo", "second ran")
	var ended time.Duration
	for !strings.Contains(second.stdout.String(), "second ran") {
		if left := groupAlive(t, group); len(left) == 0 && ended == 0 {
			ended = time.Since(killed)
		} else if len(left) > 0 && time.Since(killed) > 5*time.Second {
			t.Fatalf("processes %v of the command's group still run %v after redisync was killed", left, time.Since(killed))
		}
		time.Sleep(5 * time.Millisecond)
	}
	switch {
	case ended == 0:
		t.Fatalf("the second command ran while the first one's group was alive: %v", groupAlive(t, group))
	case ended > time.Second:
		t.Errorf("the command's group ended %v after redisync was killed, want within 1s", ended)
	}
	t.Logf("the group ended %v after the kill; the second command ran %v after it", ended, time.Since(killed))
	if c := second.exit(t); c != 0 {
		t.Errorf("second: exit code %d; stderr:\n%s", c, second.stderr)
	}
}
