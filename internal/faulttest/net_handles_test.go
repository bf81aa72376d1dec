package faulttest_test

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// netOps is one mode of one primitive seen through the calls the net
// makes: a netMutex's hold, or an rwlock's write or read side. Giving each
// mode the same shape lets one test body run against every netLevel a
// defect hit.
type netOps struct {
	Lock    func(ctx context.Context) error
	TryLock func(ctx context.Context) (bool, error)
	Unlock  func(ctx context.Context) error
	Do      func(ctx context.Context, fn func(ctx context.Context) error) error
}

// netHandle is one handle of a lock under test. write is its exclusive side;
// read is set for an rwlock only.
type netHandle struct {
	name        string // the lock's
	write, read *netOps
	rw          *rwlock.RWMutex // for the downgrade: RLock with a write hold's ctx
	Done        func() <-chan struct{}
	Token       func() uint64
	ForceUnlock func(ctx context.Context) (bool, error)
}

// netKind is a primitive the net drives.
type netKind struct {
	name string
	// new returns a netHandle kept alive by the watchdog with the given
	// lease, fenced when fenced is set.
	new func(rdb redis.UniversalClient, name string, lease time.Duration, fenced bool) *netHandle
}

// netMutex is the part rlock.Mutex and fairlock.Mutex share.
type netMutex interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Do(ctx context.Context, fn func(ctx context.Context) error) error
	Done() <-chan struct{}
	Token() uint64
	ForceUnlock(ctx context.Context) (bool, error)
}

func netMutexHandle(m netMutex, name string) *netHandle {
	return &netHandle{
		name:        name,
		write:       &netOps{Lock: m.Lock, TryLock: m.TryLock, Unlock: m.Unlock, Do: m.Do},
		Done:        m.Done,
		Token:       m.Token,
		ForceUnlock: m.ForceUnlock,
	}
}

func netRWHandle(rw *rwlock.RWMutex) *netHandle {
	return &netHandle{
		name:        rw.Name(),
		write:       &netOps{Lock: rw.Lock, TryLock: rw.TryLock, Unlock: rw.Unlock, Do: rw.Do},
		read:        &netOps{Lock: rw.RLock, TryLock: rw.TryRLock, Unlock: rw.RUnlock, Do: rw.RDo},
		rw:          rw,
		Done:        rw.Done,
		Token:       rw.Token,
		ForceUnlock: rw.ForceUnlock,
	}
}

var (
	netRlock = netKind{"rlock", func(rdb redis.UniversalClient, name string, lease time.Duration, fenced bool) *netHandle {
		opts := []rlock.Option{rlock.WithWatchdogTimeout(lease)}
		if fenced {
			opts = append(opts, rlock.WithFencing())
		}
		return netMutexHandle(rlock.New(rdb, name, opts...), name)
	}}
	netFairlock = netKind{"fairlock", func(rdb redis.UniversalClient, name string, lease time.Duration, fenced bool) *netHandle {
		// A waiter whose leave failed stays in line until its timeout:
		// as short as rlock's grant lease, so that the net's bound on
		// dead waiters (netFree) holds for both.
		opts := []fairlock.Option{fairlock.WithWatchdogTimeout(lease), fairlock.WithWaiterTimeout(rlock.WaiterTimeout)}
		if fenced {
			opts = append(opts, fairlock.WithFencing())
		}
		return netMutexHandle(fairlock.New(rdb, name, opts...), name)
	}}
	netRWlock = netKind{"rwlock", func(rdb redis.UniversalClient, name string, lease time.Duration, fenced bool) *netHandle {
		opts := []rwlock.Option{rwlock.WithWatchdogTimeout(lease)}
		if fenced {
			opts = append(opts, rwlock.WithFencing())
		}
		return netRWHandle(rwlock.New(rdb, name, opts...))
	}}
	netKinds = []netKind{netRlock, netFairlock, netRWlock}
)

// netLevel names one level a defect hit: a kind and which side of it.
type netLevel struct {
	name string
	kind netKind
	read bool // the rwlock's read side
}

// ops returns h's side that l names.
func (l netLevel) ops(h *netHandle) *netOps {
	if l.read {
		return h.read
	}
	return h.write
}

var (
	netMutexLevels = []netLevel{{"rlock", netRlock, false}, {"fairlock", netFairlock, false}, {"rwlock-write", netRWlock, false}}
	netAllLevels   = append(slices.Clip(netMutexLevels), netLevel{"rwlock-read", netRWlock, true})
)

// nameKeys returns every key of the lock called name, by SCAN (the
// cursor loop KEYS would hide from a server under load).
func nameKeys(ctx context.Context, rdb *redis.Client, name string) []string {
	var keys []string
	iter := rdb.Scan(ctx, 0, "*{"+name+"}*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys
}

// standFor makes every key of the name expire in d, as a server whose
// clock runs slow keeps a hold past the lease its holder counted on.
func standFor(ctx context.Context, rdb *redis.Client, name string, d time.Duration) {
	for _, k := range nameKeys(ctx, rdb, name) {
		rdb.PExpire(ctx, k, d)
	}
}

// keysGoneWithin reports whether every key of the name is gone within d,
// polling; it returns the keys still there (with the lock hash's fields)
// when they are not.
func keysGoneWithin(ctx context.Context, rdb *redis.Client, name string, d time.Duration) (bool, []string, map[string]string) {
	deadline := time.Now().Add(d)
	for {
		keys := nameKeys(ctx, rdb, name)
		if len(keys) == 0 {
			return true, nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, keys, rdb.HGetAll(ctx, keyspace.NewNames(name).Lock()).Val()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientFaults is a go-redis hook for two faults the proxy cannot aim
// precisely enough to be deterministic: it fails the client's pipelines
// (the watchdog's batched renewals: renewals held back, as a slow network
// or server would, until the watchdog declares the hold lost) and holds
// the client's next single script call (an acquire or release sent by a
// caller) until the test lets it go, so that the call is in flight, sent
// as far as the engine knows, across an event the test chooses.
type clientFaults struct {
	failPipes atomic.Bool
	failed    atomic.Int64 // pipelines failed so far

	mu   sync.Mutex // guards gate
	gate *scriptGate
}

// scriptGate is one held script call: caught closes when it is held,
// and the call goes on to Redis once open is closed; with reply, the call
// has run in Redis, and its reply is held.
type scriptGate struct {
	caught, open chan struct{}
	reply        bool
}

// mustCatch fails t with what unless g catches a call within 10 seconds:
// a call that sends nothing to hold would otherwise be waited for for
// ever.
func (g *scriptGate) mustCatch(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.caught:
	case <-time.After(10 * time.Second):
		t.Fatal(what + ": the fault was not injected")
	}
}

func addClientFaults(rdb *redis.Client) *clientFaults {
	f := &clientFaults{}
	rdb.AddHook(f)
	return f
}

// holdNextScript arms the one-shot hold of the next script call.
func (f *clientFaults) holdNextScript() *scriptGate {
	return f.arm(&scriptGate{caught: make(chan struct{}), open: make(chan struct{})})
}

// holdNextReply arms the one-shot hold of the next script call's reply:
// the script runs in Redis, and its reply comes back once the test lets
// it.
func (f *clientFaults) holdNextReply() *scriptGate {
	return f.arm(&scriptGate{caught: make(chan struct{}), open: make(chan struct{}), reply: true})
}

func (f *clientFaults) arm(g *scriptGate) *scriptGate {
	f.mu.Lock()
	f.gate = g
	f.mu.Unlock()
	return g
}

// holdRenewals makes renewals fail from now on and reports, within d,
// that the first has failed: the hold's last successful renewal was then
// sent a renewal interval ago or more, so a call sent after it returns is
// younger than the hold's validity by that much.
func (f *clientFaults) holdRenewals(d time.Duration) bool {
	n := f.failed.Load()
	f.failPipes.Store(true)
	return waitUntil(d, func() bool { return f.failed.Load() > n })
}

// let lets g's call go on to Redis, or disarms g if no call was caught.
func (f *clientFaults) let(g *scriptGate) {
	f.mu.Lock()
	if f.gate == g {
		f.gate = nil
	}
	f.mu.Unlock()
	close(g.open)
}

func (f *clientFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *clientFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		var g *scriptGate
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			f.mu.Lock()
			g = f.gate
			f.gate = nil
			f.mu.Unlock()
		}
		if g == nil {
			return next(ctx, cmd)
		}
		var err error
		if g.reply {
			err = next(ctx, cmd)
		}
		close(g.caught)
		<-g.open
		if !g.reply {
			err = next(ctx, cmd)
		}
		return err
	}
}

func (f *clientFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.failPipes.Load() {
			f.failed.Add(1)
			for _, c := range cmds {
				c.SetErr(io.ErrUnexpectedEOF)
			}
			return io.ErrUnexpectedEOF
		}
		return next(ctx, cmds)
	}
}
