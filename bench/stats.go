package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook counting what a client sends: round trips (a
// command, or a whole pipeline) and commands. Pub/sub traffic bypasses
// hooks; the server-side counts include it.
type counter struct {
	trips     atomic.Int64
	pipelines atomic.Int64
	cmds      atomic.Int64

	// While naming is set, named counts the commands sent by name: the
	// top-level ones, which serverStats.usecSince tells from those run
	// inside scripts. Off, it costs the timed loops nothing but a load.
	naming atomic.Bool
	mu     sync.Mutex
	named  map[string]int64
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		if c.naming.Load() {
			c.name(cmd)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.pipelines.Add(1)
		c.cmds.Add(int64(len(cmds)))
		if c.naming.Load() {
			for _, cmd := range cmds {
				c.name(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

func (c *counter) name(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.named == nil {
		c.named = make(map[string]int64)
	}
	c.named[strings.ToLower(cmd.Name())]++
}

// startNaming starts counting the commands of cs by name, from zero.
func startNaming(cs ...*counter) {
	for _, c := range cs {
		c.mu.Lock()
		c.named = nil
		c.mu.Unlock()
		c.naming.Store(true)
	}
}

// stopNaming stops counting by name and returns what cs sent since
// startNaming, summed.
func stopNaming(cs ...*counter) map[string]int64 {
	sum := make(map[string]int64)
	for _, c := range cs {
		c.naming.Store(false)
		c.mu.Lock()
		for name, n := range c.named {
			sum[name] += n
		}
		c.mu.Unlock()
	}
	return sum
}

// counts is a reading of one or more counters.
type counts struct{ trips, pipelines, cmds int64 }

func readCounters(cs ...*counter) counts {
	var r counts
	for _, c := range cs {
		r.trips += c.trips.Load()
		r.pipelines += c.pipelines.Load()
		r.cmds += c.cmds.Load()
	}
	return r
}

func (a counts) sub(b counts) counts {
	return counts{a.trips - b.trips, a.pipelines - b.pipelines, a.cmds - b.cmds}
}

// notCounted are the commands the benchmark itself sends to observe the
// server, and the connection handshake, left out of command counts.
var notCounted = map[string]bool{
	"info": true, "client|list": true, "pubsub|numsub": true,
	"hello": true, "client|setinfo": true,
}

// serverStats is a reading of INFO stats and INFO commandstats.
type serverStats struct {
	calls     map[string]int64 // per command; Redis 7 counts commands run inside scripts too
	usec      map[string]int64 // per command, the time Redis spent in it; a script's includes its commands'
	processed int64            // total_commands_processed
	opsPerSec int64            // instantaneous_ops_per_sec
}

func readServer(ctx context.Context, ctl *redis.Client) (serverStats, error) {
	s := serverStats{calls: make(map[string]int64), usec: make(map[string]int64)}
	info, err := ctl.Info(ctx, "stats", "commandstats").Result()
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case key == "total_commands_processed":
			s.processed, _ = strconv.ParseInt(val, 10, 64)
		case key == "instantaneous_ops_per_sec":
			s.opsPerSec, _ = strconv.ParseInt(val, 10, 64)
		case strings.HasPrefix(key, "cmdstat_"):
			name := strings.TrimPrefix(key, "cmdstat_")
			calls, rest, _ := strings.Cut(strings.TrimPrefix(val, "calls="), ",")
			usec, _, _ := strings.Cut(strings.TrimPrefix(rest, "usec="), ",")
			s.calls[name], _ = strconv.ParseInt(calls, 10, 64)
			s.usec[name], _ = strconv.ParseInt(usec, 10, 64)
		}
	}
	return s, nil
}

// commandsSince returns how many commands the server ran since before,
// those run inside scripts included, the benchmark's own left out.
func (s serverStats) commandsSince(before serverStats) int64 {
	var n int64
	for name, calls := range s.calls {
		if !notCounted[name] {
			n += calls - before.calls[name]
		}
	}
	return n
}

// scripting are the commands that run scripts: their time in
// commandstats includes that of the commands the scripts call, which
// commandstats also counts on their own.
var scripting = map[string]bool{
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true,
}

// usecSince returns the microseconds Redis spent running commands since
// before (commandstats usec), each counted once: a script's time includes
// the commands it called, so those are left out. sent names the commands
// the clients sent themselves (a counter's names); a command also run
// inside scripts counts for the share of its calls that were sent. With
// sent nil (a library on a client of its own, whose commands the hooks
// do not see), a command counts only when no script ran: the peers that
// run scripts (rueidislock) call their other commands from them.
func (s serverStats) usecSince(before serverStats, sent map[string]int64) float64 {
	scripts := false
	for name := range scripting {
		scripts = scripts || s.calls[name] > before.calls[name]
	}
	var usec float64
	for name, calls := range s.calls {
		d := calls - before.calls[name]
		if d <= 0 || notCounted[name] {
			continue
		}
		u := float64(s.usec[name] - before.usec[name])
		switch {
		case scripting[name]:
			usec += u
		case sent != nil:
			usec += u * min(1, float64(sent[name])/float64(d))
		case !scripts:
			usec += u
		}
	}
	return usec
}

// breakdown lists the commands run since before, by name, most first, each
// per unit of work (divided by per).
func (s serverStats) breakdown(before serverStats, per float64) string {
	type item struct {
		name  string
		calls int64
	}
	var items []item
	for name, calls := range s.calls {
		if d := calls - before.calls[name]; d > 0 && !notCounted[name] {
			items = append(items, item{name, d})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return int(b.calls - a.calls) })
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%.2f", it.name, float64(it.calls)/per)
	}
	return b.String()
}

// scriptsSince returns how many scripts (EVAL, EVALSHA) ran since before.
func (s serverStats) scriptsSince(before serverStats) int64 {
	var n int64
	for _, name := range []string{"eval", "evalsha"} {
		n += s.calls[name] - before.calls[name]
	}
	return n
}

// quantile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank method.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// latencies summarizes a set of durations.
type latencies struct {
	n        int
	p50, p99 time.Duration
}

func summarize(d []time.Duration) latencies {
	s := slices.Clone(d)
	slices.Sort(s)
	return latencies{n: len(s), p50: quantile(s, 0.50), p99: quantile(s, 0.99)}
}

// pubsubClients counts the server's pub/sub connections (CLIENT LIST TYPE
// pubsub).
func pubsubClients(ctx context.Context, ctl *redis.Client) (int, error) {
	list, err := ctl.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.Lines(list) {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n, nil
}
