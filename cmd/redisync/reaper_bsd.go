//go:build unix && !linux

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// selfPath is the program to start as the reaper: this one.
func selfPath() (string, error) { return os.Executable() }

// reaperAttr puts the reaper at the head of a process group of its own.
// Without a parent-death signal, the reaper finds that lock's process died
// by checking its parent pid (see reaperEnv).
func reaperAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startPinned(cmd *exec.Cmd) error { return cmd.Start() }
