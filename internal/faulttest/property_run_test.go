package faulttest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// netLease is the property test's watchdog timeout (renewals every third
// of it); netStand is how long a hold the watchdog gave up keeps standing
// in Redis, as on a server whose clock runs slow.
const (
	netLease = 1500 * time.Millisecond
	netStand = 2 * netLease
	netSlack = time.Second // a busy 2-core machine's scheduling, on top of a lease
	// netFree bounds how long a mode nobody holds may stay taken past
	// the last fault: a lease (a release that failed leaves a level until
	// it runs out) plus a grant lease, which a release may give to a
	// waiter that gave up while its leave was refused (the design bounds
	// dead waiters by that; fairlock's waiter timeout is set to match).
	netFree = netLease + rlock.WaiterTimeout + netSlack
)

// netModel is what the test knows one handle holds, from the calls that
// returned: the model the engine is checked against.
type netModel struct {
	w, r    int    // plain write levels (0 or 1) and plain read levels
	do      int    // levels of the Do running on the handle: 1 + re-entries
	doRead  bool   // that Do is an RDo
	token   uint64 // of the handle's current write hold
	mayLose bool   // a fault may have ended the hold: Done may close
}

func (m *netModel) levels() int  { return m.w + m.r + m.do }
func (m *netModel) writes() bool { return m.w > 0 || (m.do > 0 && !m.doRead) }

// netRun plays one sequence of steps on one lock name: three handles, 0
// and 1 on client A (through the fault proxy, with clientFaults), 2 on
// client B (straight to the server), which is also the test's own view
// of Redis.
type netRun struct {
	t       rapid.TB
	ctx     context.Context
	kind    netKind
	fenced  bool
	name    string
	proxy   *redistest.Proxy
	faults  *clientFaults
	b       *redis.Client
	hs      [3]*netHandle
	m       [3]netModel
	last    uint64    // the name's last token of a new hold
	settled time.Time // when what the last fault left in Redis may lapse
	failed  map[string]bool
	// For the checks that need a Redis with nothing in it the model does
	// not count (e): until when a hold each handle gave up may stand
	// (it may shut out others, never its own handle), until when
	// anything else a fault left of each handle may, and the lost reply
	// armed last (see standing).
	stands, noisy [3]time.Time
	drop          <-chan struct{}
	// attempts match client A's acquire scripts on the name, write and
	// read (see late).
	attempts [2]func(args []string) bool
	// releases match client A's release scripts on the name, write and
	// read (see lateUnlock).
	releases [2]func(args []string) bool
}

// fail reports a broken check once per key and lets the run go on, so
// that one sequence can show several defects (a failed inner Unlock
// leaves Done open, (d), and then hands the next Lock its token, (c)).
func (r *netRun) fail(key, format string, args ...any) {
	r.t.Helper()
	if !r.failed[key] {
		r.failed[key] = true
		r.t.Errorf(format, args...)
	}
}

func onA(h int) bool { return h < 2 }

// newNetRun sets a run up. outer owns the server and the proxy's
// cleanup; cleanup (rapid's, per check) closes what a check opened.
func newNetRun(t rapid.TB, outer testing.TB, cleanup func(func()), k netKind, fenced bool) *netRun {
	srv := redistest.SharedServer(outer)
	proxy := redistest.NewProxy(outer, srv.Addr())
	a := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	b := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	r := &netRun{t: t, ctx: context.Background(), kind: k, fenced: fenced, name: redistest.UniqueName(outer),
		proxy: proxy, faults: addClientFaults(a), b: b, settled: time.Now(), failed: map[string]bool{}}
	for i, file := range lateScripts[k.name] {
		if file != "" {
			r.attempts[i] = redistest.ScriptCall(outer, file, keyspace.NewNames(r.name).Lock())
		}
	}
	for i, file := range lateReleases[k.name] {
		if file != "" {
			r.releases[i] = redistest.ScriptCall(outer, file, keyspace.NewNames(r.name).Lock())
		}
	}
	for i := range r.hs {
		rdb := a
		if !onA(i) {
			rdb = b
		}
		r.hs[i] = k.new(rdb, r.name, netLease, fenced)
	}
	// Whatever a failed check left, the next starts with no fault armed.
	cleanup(func() { _ = a.Close(); _ = b.Close(); proxy.Close() })
	cleanup(func() { r.faults.failPipes.Store(false); proxy.Refuse(false); proxy.Resume() })
	return r
}

// side returns h's side of mode read (the write side but for an rwlock).
func (r *netRun) side(h int, read bool) (*netOps, bool) {
	if read && r.hs[h].read != nil {
		return r.hs[h].read, true
	}
	return r.hs[h].write, false
}

// waitUntil polls cond until it holds or d has passed, and reports it.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// newHold checks (c) for a new write hold of h: under WithFencing its
// token is not 0 and above every earlier token of the name.
func (r *netRun) newHold(h int) {
	r.t.Helper()
	if !r.fenced {
		return
	}
	tok := r.hs[h].Token()
	if tok == 0 || tok <= r.last {
		r.fail("c-new", "(c) handle %d's new hold has token %d, want above the name's last %d and not 0", h, tok, r.last)
	}
	r.last, r.m[h].token = tok, tok
}

// holdersOnA returns the handles of client A whose hold Done says stands.
func (r *netRun) holdersOnA() []int {
	var hs []int
	for h := range 2 {
		if r.m[h].levels() > 0 && !isClosed(r.hs[h].Done()) {
			hs = append(hs, h)
		}
	}
	return hs
}

// lost records that the holds of hs ended by a fault.
func (r *netRun) lost(hs ...int) {
	for _, h := range hs {
		m := &r.m[h]
		m.w, m.r, m.do, m.mayLose = 0, 0, 0, false
	}
}

// mayLose marks the holds of client A as possibly ended by a fault.
func (r *netRun) mayLose() {
	r.m[0].mayLose, r.m[1].mayLose = true, true
}

// closedWithin checks (d) for a loss: the Done of every handle in hs
// closes within d.
func (r *netRun) closedWithin(hs []int, d time.Duration, why string) {
	r.t.Helper()
	for _, h := range hs {
		if !waitUntil(d, func() bool { return isClosed(r.hs[h].Done()) }) {
			r.fail(fmt.Sprint("d-loss", h), "(d) handle %d's Done still open %v after %s", h, d, why)
		}
	}
}

// check checks (a) and (d) between steps.
func (r *netRun) check(where string) {
	r.t.Helper()
	writers, readers := 0, 0
	for h := range r.hs {
		m, open := &r.m[h], !isClosed(r.hs[h].Done())
		switch {
		case m.levels() == 0 && open:
			r.fail(fmt.Sprint("d-open", h), "(d) %s: handle %d's Done is open, though every level it took was released (lock hash %v)",
				where, h, r.b.HGetAll(r.ctx, keyspace.NewNames(r.name).Lock()).Val())
		case m.levels() > 0 && !open && !m.mayLose:
			r.fail(fmt.Sprint("d-closed", h), "(d) %s: handle %d's Done closed, though its hold was neither released nor lost", where, h)
		case m.levels() > 0 && !open:
			r.lost(h)
		case open && m.writes():
			writers++
		case open:
			readers++
		}
	}
	if writers > 1 || writers == 1 && readers > 0 {
		r.fail("a", "(a) %s: %d writers and %d readers whose Done is open: %+v", where, writers, readers, r.m)
	}
}

// probe checks (b) on the way: the mode the model says nobody holds is
// free for a fresh handle of client B within netFree past the last fault.
func (r *netRun) probe(where string) {
	r.t.Helper()
	var held, written bool
	for h := range r.m {
		held = held || r.m[h].levels() > 0
		written = written || r.m[h].writes()
	}
	p := r.kind.new(r.b, r.name, netLease, r.fenced)
	ops := p.write
	switch {
	case !held:
	case !written && p.read != nil:
		ops = p.read
	default:
		return
	}
	r.ownFirst(ops == p.read)
	within := max(time.Until(r.settled), 0) + netFree
	var ok bool
	waitUntil(within, func() bool { ok, _ = ops.TryLock(r.ctx); return ok })
	if !ok {
		r.fail("b-probe", "(b) %s: the model holds nothing of the mode probed (write: %v) and a fresh handle was refused for %v; lock hash %v",
			where, ops == p.write, within, r.b.HGetAll(r.ctx, keyspace.NewNames(r.name).Lock()).Val())
		return
	}
	if ops == p.write && r.fenced {
		if tok := p.Token(); tok == 0 || tok <= r.last {
			r.fail("c-probe", "(c) the probe's hold has token %d, want above the name's last %d", tok, r.last)
		}
		r.last = p.Token()
	}
	_ = ops.Unlock(r.ctx)
}

// finish releases every level the model counts, with no fault armed,
// and checks (d) and (b): every Done closed, every key gone within a
// lease past the last fault.
func (r *netRun) finish() {
	r.t.Helper()
	r.faults.failPipes.Store(false)
	r.proxy.Refuse(false)
	r.proxy.Resume()
	for h := range r.hs {
		for ; r.m[h].w > 0; r.m[h].w-- {
			_ = r.hs[h].write.Unlock(r.ctx)
		}
		for ; r.m[h].r > 0; r.m[h].r-- {
			_ = r.hs[h].read.Unlock(r.ctx)
		}
	}
	r.check("after every level was released")
	if r.failed["b-probe"] {
		return // the probe waited for the same keys already
	}
	within := max(time.Until(r.settled), 0) + netFree
	if gone, keys, hash := keysGoneWithin(r.ctx, r.b, r.name, within); !gone {
		r.fail("b-end", "(b) every caller returned and every level was released, and keys of the name are still there %v later: %v, lock hash %v",
			within, keys, hash)
	}
}
