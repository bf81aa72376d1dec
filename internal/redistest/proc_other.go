//go:build !unix

package redistest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killProcess(p *os.Process) error { return p.Kill() }
