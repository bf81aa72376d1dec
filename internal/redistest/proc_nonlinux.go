//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts redis-server into its own process group, so that the whole
// group (including any child it forks) can be killed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
