//go:build unix

package redistest

import (
	"errors"
	"os"
	"syscall"
)

// killProcess sends SIGKILL to the process group led by p.
func killProcess(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		// Fall back to the process itself (e.g. the group could not be
		// created).
		return p.Kill()
	}
	return nil
}
