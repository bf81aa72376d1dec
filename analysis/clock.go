package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// clockShimSource is the LD_PRELOAD shim that moves redis-server's wall
// clock (see clockshim/clockshim.c).
//
//go:embed clockshim/clockshim.c
var clockShimSource []byte

// buildShim compiles the clock shim into dir with gcc.
func buildShim(dir string) (string, error) {
	src, lib := filepath.Join(dir, "clockshim.c"), filepath.Join(dir, "clockshim.so")
	if err := os.WriteFile(src, clockShimSource, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("the clock fault needs gcc to build its shim (or leave it out with -faults): %v: %s", err, out)
	}
	return lib, nil
}

// A serverClock is the offset of one redis-server's wall clock: a file of
// eight bytes that the shim maps.
type serverClock struct {
	f *os.File
}

func newServerClock(path string) (*serverClock, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &serverClock{f: f}
	return c, c.set(0)
}

// set moves the server's clock d away from the true time.
func (c *serverClock) set(d time.Duration) error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(d.Nanoseconds()))
	_, err := c.f.WriteAt(b[:], 0)
	return err
}

// env is the environment that makes a redis-server use the shim and c.
func (c *serverClock) env(shim string) []string {
	return []string{"LD_PRELOAD=" + shim, "REDISYNC_CLOCK_FILE=" + c.f.Name()}
}

func (c *serverClock) close() { _ = c.f.Close() }

// checkClock makes sure the shim moves the server's clock: TIME an hour
// ahead with the offset set to an hour.
func (n *redisNode) checkClock(ctx context.Context) error {
	rdb := n.client()
	defer rdb.Close()
	if err := n.clock.set(time.Hour); err != nil {
		return err
	}
	defer n.clock.set(0)
	t, err := rdb.Time(ctx).Result()
	if err != nil {
		return err
	}
	if ahead := time.Until(t); ahead < 59*time.Minute || ahead > 61*time.Minute {
		return fmt.Errorf("the clock shim did not move redis-server's clock (TIME is %v ahead)", ahead)
	}
	return nil
}
