//go:build linux

package redistest

import "syscall"

// sysProcAttr puts redis-server into its own process group, so that the whole
// group (including any child it forks) can be killed, and asks the kernel to
// SIGKILL it if the test binary dies without running cleanups (go test
// -timeout panics, SIGKILL of the test binary). Pdeathsig fires when the OS
// thread that started the child exits; the Go runtime only retires threads of
// goroutines that exit while locked with runtime.LockOSThread, which these
// helpers never do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
