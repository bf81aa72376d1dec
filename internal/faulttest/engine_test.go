package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// A waiter's cheap retry (an attempt after a clean refusal) whose reply is
// lost must not leave the waiter refusing its own hold: it holds at once.
// Resent by go-redis, the cheap form refused the lock its first run had
// taken, and the waiter waited out its own lease.
func TestCheapRetryLostReply(t *testing.T) {
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	via := proxy.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	holder := rlock.New(direct, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := rlock.New(via, name)
	got := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	go func() { got <- waiter.Lock(wctx) }()
	channel := internal.NewNames(name).Channel()
	redistest.WaitFor(t, 5*time.Second, func() bool { return redistest.NumSub(t, direct, channel) > 0 })
	sha := scriptSHA(t, "rlock_acquire.lua")
	dropped := proxy.DropReply(func(args []string) bool {
		return isScript(args, sha) && redistest.IsScriptCall(args, mainKey(name))
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter's Lock = %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the waiter did not hold within 3s of the release")
	}
	mustDropped(t, dropped)
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	leftovers(t, direct, name)
}

// With a fixed lease, an Unlock that leaves levels re-arms the lease in
// Redis; the holder's Done must not close on the lease of the earlier
// Lock.
func TestFixedLeasePartialUnlock(t *testing.T) {
	const lease = 600 * time.Millisecond
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	for _, tc := range []struct {
		name string
		new  func(name string) (lock, unlock func(context.Context) error, done func() <-chan struct{})
	}{
		{"rlock", func(name string) (func(context.Context) error, func(context.Context) error, func() <-chan struct{}) {
			m := rlock.New(rdb, name, rlock.WithLeaseTime(lease))
			return m.Lock, m.Unlock, m.Done
		}},
		{"fairlock", func(name string) (func(context.Context) error, func(context.Context) error, func() <-chan struct{}) {
			m := fairlock.New(rdb, name, fairlock.WithLeaseTime(lease))
			return m.Lock, m.Unlock, m.Done
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			lock, unlock, done := tc.new(name)
			ctx := t.Context()
			start := time.Now()
			for range 2 {
				if err := lock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(lease * 2 / 3)
			if err := unlock(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(start.Add(lease * 4 / 3)))
			if redistest.Closed(done()) {
				t.Fatal("Done closed on the first lease although the Unlock re-armed it")
			}
			if rdb.Exists(ctx, mainKey(name)).Val() != 1 {
				t.Fatal("the lock is gone from Redis")
			}
			if err := unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// blocking is one blocking acquire of a primitive, for the ctx-rule test.
type blocking struct {
	name string
	// take returns a holder's release and a waiter's acquire (and its
	// release) on the lock called name.
	take func(rdb redis.UniversalClient, name string) (hold func(context.Context) error, release func(context.Context) error, wait func(context.Context) error, leave func(context.Context) error)
	held func(ctx context.Context, rdb *redis.Client, name string) bool
}

// A waiter's cancel racing the holder's release: a Lock that returns nil
// holds (in Redis), one that returns an error holds nothing, and nothing
// is left behind. The engine checks ctx after the reply, so no Lock whose
// ctx was done when its reply was read returns nil.
func TestCtxRuleStress(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	const rounds = 300
	for _, p := range ctxRulePrimitives {
		t.Run(p.name, func(t *testing.T) {
			held, cancelled := 0, 0
			for i := range rounds {
				name := fmt.Sprintf("%s-%d", redistest.UniqueName(t), i)
				holdIt, release, wait, leave := p.take(rdb, name)
				ctx := t.Context()
				if err := holdIt(ctx); err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithCancel(ctx)
				got := make(chan error, 1)
				go func() { got <- wait(wctx) }()
				time.Sleep(time.Duration(i%5) * 200 * time.Microsecond) // vary where the race lands
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); cancel() }()
				go func() { defer wg.Done(); _ = release(ctx) }()
				wg.Wait()
				err := <-got
				switch {
				case err == nil:
					held++
					if !p.held(ctx, rdb, name) {
						t.Fatalf("round %d: Lock returned nil but holds nothing in Redis", i)
					}
					if err := leave(ctx); err != nil {
						t.Fatalf("round %d: release: %v", i, err)
					}
				case errors.Is(err, context.Canceled):
					cancelled++
				default:
					t.Fatalf("round %d: Lock = %v", i, err)
				}
				if p.held(ctx, rdb, name) {
					t.Fatalf("round %d: a hold is left in Redis (Lock returned %v)", i, err)
				}
			}
			t.Logf("%d rounds: %d held, %d cancelled", rounds, held, cancelled)
		})
	}
}

// mutexTake adapts a mutex constructor to blocking.take.
func mutexTake[M interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}](newM func(rdb redis.UniversalClient, name string) M) func(rdb redis.UniversalClient, name string) (func(context.Context) error, func(context.Context) error, func(context.Context) error, func(context.Context) error) {
	return func(rdb redis.UniversalClient, name string) (func(context.Context) error, func(context.Context) error, func(context.Context) error, func(context.Context) error) {
		h, w := newM(rdb, name), newM(rdb, name)
		return h.Lock, h.Unlock, w.Lock, w.Unlock
	}
}

var ctxRulePrimitives = []blocking{
	{"rlock", mutexTake(func(rdb redis.UniversalClient, name string) *rlock.Mutex { return rlock.New(rdb, name) }), keyExists},
	{"fairlock", mutexTake(func(rdb redis.UniversalClient, name string) *fairlock.Mutex { return fairlock.New(rdb, name) }), keyExists},
	{"rwlock write", mutexTake(newRWWriter), keyExists},
	{"rwlock read", func(rdb redis.UniversalClient, name string) (func(context.Context) error, func(context.Context) error, func(context.Context) error, func(context.Context) error) {
		h, w := newRWWriter(rdb, name), newRWWriter(rdb, name)
		return h.Lock, h.Unlock, w.RLock, w.RUnlock
	}, keyExists},
}

func keyExists(ctx context.Context, rdb *redis.Client, name string) bool {
	return rdb.Exists(ctx, mainKey(name)).Val() == 1
}
