package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/cmdstats"
)

// counter is a go-redis hook counting what a client sends: round trips (a
// command, or a whole pipeline) and commands. Pub/sub traffic bypasses
// hooks; the server-side counts include it.
type counter struct {
	trips     atomic.Int64
	pipelines atomic.Int64
	cmds      atomic.Int64

	// While naming is set, named counts the commands sent by name: the
	// top-level ones, which cmdstats.Stats.Usec tells from those run
	// inside scripts. Off, it costs the timed loops nothing but a load.
	naming atomic.Bool
	named  cmdstats.Sent
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		if c.naming.Load() {
			c.named.Add(cmd)
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
				c.named.Add(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

// startNaming starts counting the commands of cs by name, from zero.
func startNaming(cs ...*counter) {
	for _, c := range cs {
		c.named.Take()
		c.naming.Store(true)
	}
}

// stopNaming stops counting by name and returns what cs sent since
// startNaming, summed.
func stopNaming(cs ...*counter) map[string]int64 {
	sum := make(map[string]int64)
	for _, c := range cs {
		c.naming.Store(false)
		for name, n := range c.named.Take() {
			sum[name] += n
		}
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
// server, and the connection handshake, left out of every reading.
var notCounted = map[string]bool{
	"info": true, "client|list": true, "pubsub|numsub": true,
	"hello": true, "client|setinfo": true,
}

// serverStats is a reading of INFO stats and INFO commandstats.
type serverStats struct {
	cmds      cmdstats.Stats // per command, notCounted left out; Redis 7 counts commands run inside scripts too
	processed int64          // total_commands_processed
	opsPerSec int64          // instantaneous_ops_per_sec
}

func readServer(ctx context.Context, ctl *redis.Client) (serverStats, error) {
	var s serverStats
	info, err := ctl.Info(ctx, "stats", "commandstats").Result()
	if err != nil {
		return s, err
	}
	s.cmds, _ = cmdstats.Parse(info)
	maps.DeleteFunc(s.cmds, func(name string, _ cmdstats.Stat) bool { return notCounted[name] })
	for line := range strings.Lines(info) {
		key, val, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch key {
		case "total_commands_processed":
			s.processed, _ = strconv.ParseInt(val, 10, 64)
		case "instantaneous_ops_per_sec":
			s.opsPerSec, _ = strconv.ParseInt(val, 10, 64)
		}
	}
	return s, nil
}

// commandsSince returns how many commands the server ran since before,
// those run inside scripts included, the benchmark's own left out.
func (s serverStats) commandsSince(before serverStats) int64 {
	var n int64
	for name, st := range s.cmds {
		n += st.Calls - before.cmds[name].Calls
	}
	return n
}

// usecSince returns the microseconds Redis spent running commands since
// before, each counted once (cmdstats.Stats.Usec). sent names the
// commands the clients sent themselves (a counter's names); ownClient
// says a library runs on a client of its own, whose commands the hooks do
// not see (cmdstats.Stats.UsecUnseen).
func (s serverStats) usecSince(before serverStats, sent map[string]int64, ownClient bool) float64 {
	d := s.cmds.Since(before.cmds)
	if ownClient {
		return d.UsecUnseen()
	}
	return d.Usec(sent)
}

// breakdown lists the commands run since before, by name, most first, each
// per unit of work (divided by per).
func (s serverStats) breakdown(before serverStats, per float64) string {
	type item struct {
		name  string
		calls int64
	}
	var items []item
	for name, st := range s.cmds {
		if d := st.Calls - before.cmds[name].Calls; d > 0 {
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
		n += s.cmds[name].Calls - before.cmds[name].Calls
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
