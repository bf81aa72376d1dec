package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// selfPath is the program to start as the reaper: this one, also when its
// file was replaced or removed since it started.
func selfPath() (string, error) { return "/proc/self/exe", nil }

// reaperAttr puts the reaper at the head of a process group of its own and
// asks the kernel to send it SIGTERM when lock's process dies (the reaper
// then checks its parent pid, see reaperEnv).
func reaperAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// startPinned starts cmd from a thread that is not retired meanwhile: the
// parent-death signal fires when the thread that forked exits, and the Go
// runtime retires only threads that a goroutine locked and never unlocked.
func startPinned(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}
