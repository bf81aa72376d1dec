package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.pipelines.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
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
	processed int64            // total_commands_processed
	opsPerSec int64            // instantaneous_ops_per_sec
}

func readServer(ctx context.Context, ctl *redis.Client) (serverStats, error) {
	s := serverStats{calls: make(map[string]int64)}
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
			calls, _, _ := strings.Cut(strings.TrimPrefix(val, "calls="), ",")
			s.calls[strings.TrimPrefix(key, "cmdstat_")], _ = strconv.ParseInt(calls, 10, 64)
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
