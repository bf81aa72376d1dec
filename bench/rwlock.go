// The rwlock scenario, written against the rwlock API of DESIGN.md.
// Remove the build line above once the rwlock branch is merged.

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

func init() { scenarios = append(scenarios, scenario{"rwlock", readers}) }

const (
	nReaders   = 8
	readThink  = 4 * time.Millisecond
	writeThink = 20 * time.Millisecond
	rwHold     = time.Millisecond
)

// The roles of the rwlock workers.
const (
	readerRole = iota
	writerRole
	rwRoles
)

// readers runs 8 readers and one writer over 4 clients: readers think
// 0-4 ms and read for 1 ms, the writer thinks 0-20 ms and writes for 1 ms.
// An rlock taken by all of them shows what sharing the reads buys.
func readers(ctx context.Context, e *env) (*table, error) {
	tb := newTable(fmt.Sprintf("rwlock: %d readers and 1 writer over %d clients, 1 ms holds", nReaders, nClients),
		"lock", "reads/s", "writes/s", "read wait p99", "write wait p99", "most readers at once", "Redis commands/op")
	for _, name := range []string{"redisync rwlock", "redisync rlock (exclusive)"} {
		key := "bench:rw:" + name
		l := loops{roles: rwRoles, allowed: func(in []int32) bool {
			return in[writerRole] == 0 || in[writerRole] == 1 && in[readerRole] == 0
		}}
		var rdbs []*redis.Client
		for range nClients {
			rdb, cnt := e.client()
			rdbs, l.counters = append(rdbs, rdb), append(l.counters, cnt)
		}
		for i := range nReaders + 1 {
			rdb := rdbs[i%nClients]
			w := worker{role: readerRole, think: readThink, hold: rwHold}
			if i == nReaders {
				w.role, w.think = writerRole, writeThink
			}
			if name == "redisync rwlock" {
				rw := rwlock.New(rdb, key)
				w.lock, w.unlock = rw.RLock, rw.RUnlock
				if w.role == writerRole {
					w.lock, w.unlock = rw.Lock, rw.Unlock
				}
			} else {
				m := rlock.New(rdb, key)
				w.lock, w.unlock = m.Lock, m.Unlock
			}
			l.workers = append(l.workers, w)
		}
		r, err := l.run(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		secs := r.elapsed.Seconds()
		rd, wr := r.roles[readerRole], r.roles[writerRole]
		tb.add(name, num(float64(rd.ops)/secs), num(float64(wr.ops)/secs),
			dur(summarize(rd.waits).p99), dur(summarize(wr.waits).p99),
			fmt.Sprint(rd.maxInside), num(float64(r.cmds)/float64(r.ops())))
	}
	tb.note("Measured for %v after %v of warm-up.", e.cfg.window, e.cfg.warmup)
	return tb, nil
}
