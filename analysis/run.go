package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A run is the harness's state for the whole run: the network, the
// binary the clients and the resource run, the directory of histories.
type run struct {
	cfg     config
	exe     string
	dir     string
	shim    string // the clock shim, built when the clock fault runs
	started time.Time
}

// newRun sets up the network. On error nothing is left behind.
func newRun(cfg config) (*run, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redisync-analysis-")
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, exe: exe, dir: dir, started: time.Now()}
	if slices.Contains(cfg.faults, "clock") || slices.Contains(cfg.faults, "mixed") {
		if r.shim, err = buildShim(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := setupNet(cfg.clients); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return r, nil
}

// close removes the network and, unless -keep, the run's directory, and
// says whether anything was left behind.
func (r *run) close() {
	removeLeftovers()
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "analysis: could not remove:", left)
	} else {
		fmt.Println("teardown: every namespace, link and process of the run removed")
	}
	if r.cfg.keep {
		fmt.Println("histories and logs kept in", r.dir)
		return
	}
	_ = os.RemoveAll(r.dir)
}

// all runs the segments, each primitive under each fault kind that
// applies to it (or the pairs of -smoke), and returns their results. An
// interrupt ends it with the interrupt's error.
func (r *run) all(ctx context.Context) ([]segResult, error) {
	scale := r.scale()
	fmt.Printf("%d segments (%d primitives, %d fault kinds), about %v: %d clients, lease %v\n",
		len(r.segments()), len(r.cfg.prims), len(r.cfg.faults),
		time.Duration(scale*float64(r.least())).Round(time.Second), r.cfg.clients, r.cfg.lease)
	if slices.Contains(r.cfg.faults, "mixed") {
		fmt.Printf("mixed faults drawn with seed %d (-seed %d draws them again)\n", r.cfg.seed, r.cfg.seed)
	}
	var results []segResult
	for _, pair := range r.segments() {
		prim, fault := pair[0], pair[1]
		dur := time.Duration(scale * float64(minSegment(fault, r.cfg.lease)))
		s := &segment{r: r, n: len(results) + 1, prim: prim, fault: fault, dur: dur,
			dir: filepath.Join(r.dir, fmt.Sprintf("%02d-%s-%s", len(results)+1, prim, fault))}
		res, err := s.run(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if err != nil {
			return nil, fmt.Errorf("%s under %s: %w", prim, fault, err)
		}
		fmt.Println(res.line())
		results = append(results, res)
	}
	return results, nil
}

// segments are the run's primitive and fault pairs, in order: -smoke's,
// or every primitive under every fault kind that applies to it.
func (r *run) segments() [][2]string {
	if r.cfg.pairs != nil {
		return r.cfg.pairs
	}
	var pairs [][2]string
	for _, prim := range r.cfg.prims {
		for _, fault := range r.cfg.faults {
			if applies(prim, fault) {
				pairs = append(pairs, [2]string{prim, fault})
			}
		}
	}
	return pairs
}

// least is the time the whole run takes at the least: the segments, each
// long enough for one fault.
func (r *run) least() time.Duration {
	var d time.Duration
	for _, p := range r.segments() {
		d += minSegment(p[1], r.cfg.lease)
	}
	return d
}

// scale stretches every segment in proportion so the whole run takes
// -time, but never below one fault per segment.
func (r *run) scale() float64 {
	return max(1, float64(r.cfg.total)/float64(r.least()))
}
