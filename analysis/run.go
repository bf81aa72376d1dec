package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if all := cfg.allFaults(); slices.Contains(all, "clock") || slices.Contains(all, "mixed") {
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

// all runs the segments of the plan and returns their results. An
// interrupt ends it with the interrupt's error.
func (r *run) all(ctx context.Context) ([]segResult, error) {
	scale := r.scale()
	plan := r.plan()
	fmt.Printf("%s: %d clients\n", r.planSummary(), r.cfg.clients)
	if slices.Contains(r.cfg.faults, "mixed") {
		fmt.Printf("mixed faults drawn with seed %d (-seed %d draws them again)\n", r.cfg.seed, r.cfg.seed)
	}
	var results []segResult
	for _, p := range plan {
		dur := p.dur
		if !p.extra {
			dur = time.Duration(scale * float64(dur))
		}
		n := len(results) + 1
		s := &segment{r: r, n: n, prim: p.prim, fault: p.fault, lease: p.lease, want: p.want, extraLease: p.extra,
			dur: dur, dir: filepath.Join(r.dir, fmt.Sprintf("%02d-%s-%s-%v", n, p.prim, p.fault, p.lease))}
		res, err := s.run(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.label(), err)
		}
		fmt.Println(res.line())
		results = append(results, res)
	}
	return results, nil
}

// planSummary says how many segments the run makes and how long it takes.
func (r *run) planSummary() string {
	scale, n := r.scale(), len(r.plan())
	return fmt.Sprintf("%d segments (%d primitives, %d fault kinds), about %v planned (%s), plus about %v to start "+
		"and check them", n, len(r.cfg.prims), len(r.cfg.faults), r.planned(scale).Round(time.Second),
		r.planText(scale), time.Duration(n)*segmentOverhead)
}

// segmentOverhead is about what a segment takes besides its planned
// time, on a 2-core machine shared with other work: fresh servers (a
// replica, a Sentinel), the resource and the clients started, the
// clients' last holds, the check of the histories.
const segmentOverhead = time.Second

// A planned segment: a primitive under a fault kind with a lease, asked
// for want faults, dur long (before -time stretches it).
type planned struct {
	prim, fault string
	lease       time.Duration
	want        int
	extra       bool // a lease of -leases beyond the first
	dur         time.Duration
}

func (p planned) label() string {
	if p.extra {
		return fmt.Sprintf("%s under %s (lease %v)", p.prim, p.fault, p.lease)
	}
	return fmt.Sprintf("%s under %s", p.prim, p.fault)
}

// plan is the run's segments in order: every pair of segments (-smoke's,
// or every primitive under every fault kind that applies to it) with the
// lease and -injections faults each; then, for each further lease of
// -leases, every primitive under each kind of -lease-faults that applies
// to it, one fault each.
func (r *run) plan() []planned {
	var out []planned
	for _, pair := range r.segments() {
		out = append(out, planned{prim: pair[0], fault: pair[1], lease: r.cfg.lease, want: max(1, r.cfg.injections),
			dur: minSegment(pair[1], r.cfg.lease, r.cfg.injections)})
	}
	for _, lease := range r.cfg.extraLeases {
		for _, prim := range r.cfg.prims {
			for _, fault := range r.cfg.leaseFaults {
				if applies(prim, fault) {
					out = append(out, planned{prim: prim, fault: fault, lease: lease, want: 1, extra: true,
						dur: minSegment(fault, lease, 1)})
				}
			}
		}
	}
	return out
}

// planText says how the plan's time splits by lease.
func (r *run) planText(scale float64) string {
	var parts []string
	leases := append([]time.Duration{r.cfg.lease}, r.cfg.extraLeases...)
	for i, lease := range leases {
		n, d := 0, time.Duration(0)
		for _, p := range r.plan() {
			if p.lease == lease && p.extra == (i > 0) {
				n++
				if p.extra {
					d += p.dur
				} else {
					d += time.Duration(scale * float64(p.dur))
				}
			}
		}
		what := fmt.Sprintf("at least %s of each kind on each primitive", plural(max(1, r.cfg.injections), "fault"))
		if i > 0 {
			what = fmt.Sprintf("one fault of %s on each primitive", strings.Join(r.cfg.leaseFaults, ", "))
		}
		parts = append(parts, fmt.Sprintf("lease %v: %s, %s, %v", lease, plural(n, "segment"), what, d.Round(time.Second)))
	}
	return strings.Join(parts, "; ")
}

// segments are the run's primitive and fault pairs under the first
// lease, in order: -smoke's, or every primitive under every fault kind
// that applies to it.
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

// least is the time the segments of the first lease take at the least,
// each long enough for its faults.
func (r *run) least() time.Duration {
	var d time.Duration
	for _, p := range r.plan() {
		if !p.extra {
			d += p.dur
		}
	}
	return d
}

// planned is the time the segments take, stretched by scale.
func (r *run) planned(scale float64) time.Duration {
	return time.Duration(scale*float64(r.least())) + r.leastExtra()
}

// leastExtra is the time the segments of the further leases take: -time
// does not stretch them.
func (r *run) leastExtra() time.Duration {
	var d time.Duration
	for _, p := range r.plan() {
		if p.extra {
			d += p.dur
		}
	}
	return d
}

// scale stretches every segment of the first lease in proportion so the
// whole run takes -time, but never below the faults each was planned for.
func (r *run) scale() float64 {
	return max(1, float64(r.cfg.total-r.leastExtra())/float64(r.least()))
}
