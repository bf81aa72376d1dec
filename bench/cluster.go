package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func init() { scenarios = append(scenarios, scenario{"cluster", clusterTransport}) }

// settleTimeout bounds the wait for the pub/sub connections of a finished
// measurement to be gone from the servers.
const settleTimeout = 10 * time.Second

// transport is where the cluster scenario parks its waiters: the
// standalone server or the cluster.
type transport struct {
	name    string
	sharded bool
	// client returns a new client with a counting hook; the caller closes it.
	client func() (redis.UniversalClient, *counter)
	// nodes observe every server (every master of the cluster).
	nodes []*redis.Client
}

// clusterTransport compares the wake-up transport on a three-master cluster
// with the standalone server: N waiters on one client, each on its own lock
// held by another client, for each N of -cluster-n.
func clusterTransport(ctx context.Context, e *env) (*table, error) {
	if e.cfg.clusterRuns < 1 {
		return nil, fmt.Errorf("-cluster-runs %d: want at least 1", e.cfg.clusterRuns)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.clusterTimeout)
	defer cancel()
	c, err := redistest.LaunchCluster(false)
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("REDISYNC_REQUIRE_REDIS") != "1" {
		// The other scenarios' tables stand; say why this one is empty.
		tb := newTable("Wake-up transport on a cluster", "skipped")
		tb.add(fmt.Sprintf("%v (Debian: apt-get install redis-tools, or set %s)", err, redistest.CLIEnv))
		return tb, nil
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()

	standalone := &transport{
		name:  "standalone",
		nodes: []*redis.Client{e.ctl},
		client: func() (redis.UniversalClient, *counter) {
			rdb := redis.NewClient(&redis.Options{Addr: e.addr, PoolTimeout: time.Minute})
			cnt := &counter{}
			rdb.AddHook(cnt)
			return rdb, cnt
		},
	}
	cluster := &transport{
		name:    fmt.Sprintf("cluster, %d masters", len(c.Nodes())),
		sharded: true,
		client: func() (redis.UniversalClient, *counter) {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolTimeout: time.Minute})
			cnt := &counter{}
			rdb.AddHook(cnt)
			return rdb, cnt
		},
	}
	for _, addr := range c.Addrs() {
		ctl := redis.NewClient(&redis.Options{Addr: addr})
		defer ctl.Close()
		cluster.nodes = append(cluster.nodes, ctl)
	}
	info, err := cluster.nodes[0].Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}

	tb := newTable(fmt.Sprintf("Wake-up transport: N waiters on one client, one on each of N locks held by another client (%s cluster of %d masters, no replicas)",
		serverVersion(info), len(c.Nodes())),
		"transport", "N", "slots", "time to park all", "pub/sub connections", "client heap for them", "heap per waiter",
		"release to acquire: p50", "release to acquire: all")
	for _, tr := range []*transport{standalone, cluster} {
		for _, n := range e.cfg.clusterN {
			runs := make([]parkResult, e.cfg.clusterRuns)
			for i := range runs {
				var err error
				if runs[i], err = parkOnLocks(ctx, tr, n); err != nil {
					return nil, fmt.Errorf("%s, N=%d: %w", tr.name, n, err)
				}
			}
			r := medianResult(runs)
			slots := "-"
			if tr.sharded {
				slots = fmt.Sprint(r.slots)
			}
			tb.add(tr.name, fmt.Sprint(n), slots, dur(r.park), fmt.Sprint(r.conns),
				fmt.Sprintf("%+.1f MiB", r.heap/(1<<20)), fmt.Sprintf("%.1f KiB", r.heap/float64(n)/(1<<10)),
				dur(r.p50), dur(r.all))
		}
	}
	tb.note("Each cell is the median of %d runs, each with a new client and new locks.", e.cfg.clusterRuns)
	tb.note("Slots: the distinct hash slots of the N locks (CLUSTER KEYSLOT of their names).")
	tb.note("Time to park: from starting the waiters until the client's last round trip before it went quiet with every waiter's channel subscribed on the servers.")
	tb.note("Pub/sub connections: CLIENT LIST TYPE pubsub, summed over the nodes, while the waiters are parked. Client heap: MemStats.HeapAlloc after runtime.GC(), parked minus before the waiters started (handles, goroutines' heap and the hub's connections).")
	tb.note("Release to acquire: every holder unlocks at once (%d at a time); the time from the first unlock until a waiter holds its lock, the median over the waiters and the last of them.", parallelism)
	return tb, nil
}

// parkResult is one row of the cluster table.
type parkResult struct {
	slots    int // distinct hash slots of the locks, on a cluster
	park     time.Duration
	conns    int
	heap     float64 // bytes, all waiters
	p50, all time.Duration
}

// medianResult takes the median of every measure over the runs on its own.
func medianResult(runs []parkResult) parkResult {
	mid := func(v func(parkResult) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = v(r)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	d := func(v func(parkResult) time.Duration) time.Duration {
		return time.Duration(mid(func(r parkResult) float64 { return float64(v(r)) }))
	}
	return parkResult{
		slots: runs[0].slots,
		park:  d(func(r parkResult) time.Duration { return r.park }),
		conns: int(mid(func(r parkResult) float64 { return float64(r.conns) })),
		heap:  mid(func(r parkResult) float64 { return r.heap }),
		p50:   d(func(r parkResult) time.Duration { return r.p50 }),
		all:   d(func(r parkResult) time.Duration { return r.all }),
	}
}

// parkOnLocks parks n waiters of one client on n locks held by another and
// releases them.
func parkOnLocks(ctx context.Context, tr *transport, n int) (parkResult, error) {
	var r parkResult
	// Start without leftovers of the previous row.
	if err := waitPubSub(ctx, tr, 0); err != nil {
		return r, err
	}
	key := func(i int) string { return "bench:cluster:" + strconv.Itoa(n) + ":" + strconv.Itoa(i) }
	if tr.sharded {
		var err error
		if r.slots, err = distinctSlots(ctx, tr.nodes[0], n, key); err != nil {
			return r, err
		}
	}
	hrdb, _ := tr.client()
	defer hrdb.Close()
	holders := make([]*rlock.Mutex, n)
	for i := range holders {
		holders[i] = rlock.New(hrdb, key(i))
	}
	defer unlockAll(ctx, holders)
	if err := forEach(ctx, n, func(i int) error { return holders[i].Lock(ctx) }); err != nil {
		return r, fmt.Errorf("holders: %w", err)
	}

	rdb, cnt := tr.client()
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil { // a cluster client loads its slot map
		return r, err
	}
	var (
		mu   sync.Mutex
		held = make([]time.Time, 0, n)
	)
	p := &parking{rdb: rdb, cnt: cnt, key: key,
		held: func(int) {
			now := time.Now()
			mu.Lock()
			held = append(held, now)
			mu.Unlock()
		},
		subscribed: func() bool {
			got, err := channels(ctx, tr)
			return err == nil && got == n
		},
	}
	defer p.stop()
	if err := p.park(ctx, n); err != nil {
		return r, err
	}
	r.park, r.heap = p.took, p.heap*float64(n)
	var err error
	if r.conns, err = pubsubConns(ctx, tr); err != nil {
		return r, err
	}

	start := time.Now()
	unlockAll(ctx, holders)
	if err := p.wait(); err != nil {
		return r, err
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if len(held) != n {
		return r, fmt.Errorf("%d of %d waiters acquired", len(held), n)
	}
	ds := make([]time.Duration, n)
	for i, t := range held {
		ds[i] = t.Sub(start)
	}
	slices.Sort(ds)
	r.p50, r.all = quantile(ds, 0.5), ds[n-1]
	return r, nil
}

// distinctSlots counts the hash slots of the locks key(0..n-1) with CLUSTER
// KEYSLOT, in one pipeline on ctl. A lock's key, and its channel, hash by
// the lock's name alone (it is the key's hash tag).
func distinctSlots(ctx context.Context, ctl *redis.Client, n int, key func(int) string) (int, error) {
	cmds, err := ctl.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.ClusterKeySlot(ctx, key(i))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	seen := map[int64]bool{}
	for _, c := range cmds {
		seen[c.(*redis.IntCmd).Val()] = true
	}
	return len(seen), nil
}

// pubsubConns sums CLIENT LIST TYPE pubsub over tr's nodes.
func pubsubConns(ctx context.Context, tr *transport) (int, error) {
	total := 0
	for _, ctl := range tr.nodes {
		n, err := pubsubClients(ctx, ctl)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// waitPubSub waits until tr's nodes have want pub/sub connections.
func waitPubSub(ctx context.Context, tr *transport, want int) error {
	var got int
	err := poll(ctx, settleTimeout, func() bool {
		var err error
		got, err = pubsubConns(ctx, tr)
		return err == nil && got == want
	})
	if err != nil {
		return fmt.Errorf("%d pub/sub connections left, want %d: %w", got, want, err)
	}
	return nil
}

// channels counts the scenario's channels with subscribers on tr's nodes
// (PUBSUB SHARDCHANNELS on a cluster, PUBSUB CHANNELS on standalone).
func channels(ctx context.Context, tr *transport) (int, error) {
	const pattern = "*bench:cluster:*"
	total := 0
	for _, ctl := range tr.nodes {
		var list []string
		var err error
		if tr.sharded {
			list, err = ctl.PubSubShardChannels(ctx, pattern).Result()
		} else {
			list, err = ctl.PubSubChannels(ctx, pattern).Result()
		}
		if err != nil {
			return 0, err
		}
		total += len(list)
	}
	return total, nil
}

// parseSizes parses a comma-separated list of positive counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q in %q", f, s)
		}
		out = append(out, n)
	}
	return out, nil
}
