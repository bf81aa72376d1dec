package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// A waiter's attempt that finds the lock granted to it (its grant message
// was lost), and whose reply is lost in turn, gives the level back (the
// attempt's outcome is unknown) and takes the lock again: the waiter holds
// within a few seconds of the release, nobody else does, and nothing is
// left behind. (The attempt is never resent by go-redis: a resent run
// would report the hold as a retry, and the undo would then release the
// hold the waiter believes it has.)
func TestGrantFoundByAttemptLostReply(t *testing.T) {
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	name := redistest.UniqueName(t)
	waiterName := "lost-reply-waiter-" + name
	via := proxy.NewClient(t, func(o *redis.Options) { o.ClientName = waiterName })
	ctx := t.Context()
	holder := rlock.New(direct, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := rlock.New(via, name)
	got := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() { got <- waiter.Lock(wctx) }()
	parked(t, direct, name, 1)
	dropped := proxy.DropReply(redistest.ScriptCall(t, "rlock_acquire.lua", mainKey(name)))
	// The grant's message is lost (else no attempt would be made): an
	// attempt finds the grant.
	var err error
	whilePubSubDown(t, direct, proxy, waiterName, func() { err = holder.Unlock(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter's Lock = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not hold within 5s of the release")
	}
	mustDropped(t, dropped)
	if v := redistest.Holders(ctx, direct, mainKey(name)); len(v) != 1 {
		t.Fatalf("lock hash = %v, want the waiter alone", v)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	leftovers(t, direct, name)
}

// With a fixed lease, a re-entry re-arms the lease in Redis (the
// renewal it sends); the holder's Done must not close on the lease of the
// earlier Lock. The Unlock of the inner level sends nothing.
func TestFixedLeaseReentryRearms(t *testing.T) {
	const lease = 600 * time.Millisecond
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	for _, tc := range []struct {
		name string
		new  func(name string) mutexLike
	}{
		{"rlock", func(name string) mutexLike { return rlock.New(rdb, name, rlock.WithLeaseTime(lease)) }},
		{"fairlock", func(name string) mutexLike { return fairlock.New(rdb, name, fairlock.WithLeaseTime(lease)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			m := tc.new(name)
			var start time.Time
			err := m.Do(t.Context(), func(ctx context.Context) error {
				start = time.Now()
				time.Sleep(lease * 2 / 3)
				if err := m.Lock(ctx); err != nil {
					return err
				}
				if err := m.Unlock(ctx); err != nil {
					return err
				}
				time.Sleep(time.Until(start.Add(lease * 4 / 3)))
				if redistest.Closed(m.(interface{ Done() <-chan struct{} }).Done()) {
					t.Fatal("Done closed on the first lease although the re-entry re-armed it")
				}
				if rdb.Exists(ctx, mainKey(name)).Val() != 1 {
					t.Fatal("the lock is gone from Redis")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// blocking is one blocking acquire of a primitive, for the ctx-rule test.
type blocking struct {
	name string
	// take returns a holder's acquire and release on client h, and a
	// waiter's on client w, on the lock called name.
	take func(h, w redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error)
	held func(ctx context.Context, rdb *redis.Client, name string) bool
}

// lateReplies records whether a script reply was read after the ctx of
// its command had ended: the take the ctx rule is about.
type lateReplies struct{ seen atomic.Bool }

func (l *lateReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *lateReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (l *lateReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && strings.HasPrefix(cmd.Name(), "eval") && ctx.Err() != nil {
			l.seen.Store(true)
		}
		return err
	}
}

// A waiter's cancel racing the holder's release: a Lock that returns nil
// holds (in Redis), one that returns an error holds nothing, nothing is
// left behind, and no Lock whose acquire reply was read after its ctx
// ended returns nil.
func TestCtxRuleStress(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	late := &lateReplies{}
	waiting := srv.NewClient(t)
	waiting.AddHook(late)
	const rounds = 300
	for _, p := range ctxRulePrimitives {
		t.Run(p.name, func(t *testing.T) {
			held, cancelled, lateTakes := 0, 0, 0
			for i := range rounds {
				name := fmt.Sprintf("%s-%d", redistest.UniqueName(t), i)
				holdIt, release, wait, leave := p.take(rdb, waiting, name)
				ctx := t.Context()
				if err := holdIt(ctx); err != nil {
					t.Fatal(err)
				}
				late.seen.Store(false)
				wctx, cancel := context.WithCancel(ctx)
				got := make(chan error, 1)
				go func() { got <- wait(wctx) }()
				// Pacing, not synchronisation: the waiter is usually
				// parked, and the cancel lands at varied points of the
				// wake-up and take that the release starts.
				time.Sleep(time.Millisecond)
				released := make(chan struct{})
				go func() { defer close(released); _ = release(ctx) }()
				time.Sleep(time.Duration(i%8) * 150 * time.Microsecond)
				cancel()
				<-released
				err := <-got
				if late.seen.Load() {
					lateTakes++
				}
				switch {
				case err == nil:
					held++
					if late.seen.Load() {
						t.Fatalf("round %d: Lock returned nil after reading its reply with ctx done", i)
					}
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
				// What a cancelled Lock gives back, it may give back in
				// the background, after it returned.
				perclient.AwaitTidied(ctx)
				if p.held(ctx, rdb, name) {
					t.Fatalf("round %d: a hold is left in Redis (Lock returned %v)", i, err)
				}
			}
			t.Logf("%d rounds: %d held, %d cancelled, %d replies read after the cancel", rounds, held, cancelled, lateTakes)
		})
	}
}

// mutexTake adapts a mutex constructor to blocking.take.
func mutexTake[M interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}](newM func(rdb redis.UniversalClient, name string) M) func(h, w redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
	return func(hc, wc redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
		h, w := newM(hc, name), newM(wc, name)
		return h.Lock, h.Unlock, w.Lock, w.Unlock
	}
}

var ctxRulePrimitives = []blocking{
	{"rlock", mutexTake(func(rdb redis.UniversalClient, name string) *rlock.Mutex { return rlock.New(rdb, name) }), keyExists},
	{"fairlock", mutexTake(func(rdb redis.UniversalClient, name string) *fairlock.Mutex { return fairlock.New(rdb, name) }), keyExists},
	{"rwlock write", mutexTake(newRWWriter), keyExists},
	{"rwlock read", func(hc, wc redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
		h, w := newRWWriter(hc, name), newRWWriter(wc, name)
		return h.Lock, h.Unlock, w.RLock, w.RUnlock
	}, keyExists},
	{"leased", leasedTake, permitTaken},
}

// leasedTake is blocking.take for a leased semaphore of one permit, whose
// permits the watchdog keeps alive.
func leasedTake(hc, wc redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
	h, w := semaphore.NewLeased(hc, name), semaphore.NewLeased(wc, name)
	var hid, wid string
	return func(ctx context.Context) (err error) {
			if err = h.SetPermits(ctx, 1); err == nil {
				hid, err = h.Acquire(ctx, 0)
			}
			return err
		}, func(ctx context.Context) error { return h.Release(ctx, hid) },
		func(ctx context.Context) (err error) { wid, err = w.Acquire(ctx, 0); return err },
		func(ctx context.Context) error { return w.Release(ctx, wid) }
}

func permitTaken(ctx context.Context, rdb *redis.Client, name string) bool {
	return rdb.ZCard(ctx, mainKey(name)).Val() > 0
}

func keyExists(ctx context.Context, rdb *redis.Client, name string) bool {
	return rdb.Exists(ctx, mainKey(name)).Val() == 1
}

// Releases are not abandoned because the caller's ctx ended: a deferred
// Unlock, RUnlock or Release after a cancelled request frees the lock at
// once, and a waiter on another client holds within 2s (a release left
// to the holder's lease would take the watchdog's 30s; a counting
// semaphore's permits would never come back).
func TestReleaseWithCancelledCtx(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb, other := srv.NewClient(t), srv.NewClient(t)
	for _, p := range append(ctxRulePrimitives, blocking{"rwlock read release", func(hc, wc redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
		h, w := newRWWriter(hc, name), newRWWriter(wc, name)
		return h.RLock, h.RUnlock, w.Lock, w.Unlock
	}, keyExists}, blocking{"semaphore", countingTake, func(ctx context.Context, rdb *redis.Client, name string) bool {
		return rdb.Get(ctx, mainKey(name)).Val() == "0"
	}}) {
		t.Run(p.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			holdIt, release, wait, leave := p.take(rdb, other, name)
			ctx, cancel := context.WithCancel(t.Context())
			if err := holdIt(ctx); err != nil {
				t.Fatal(err)
			}
			got := make(chan time.Time, 1)
			go func() {
				if err := wait(t.Context()); err != nil {
					t.Errorf("waiter: %v", err)
				}
				got <- time.Now()
			}()
			time.Sleep(50 * time.Millisecond) // pacing: the waiter usually parks first
			cancel()
			if err := release(ctx); err != nil {
				t.Fatalf("release with a cancelled ctx: %v", err)
			}
			released := time.Now()
			select {
			case at := <-got:
				if d := at.Sub(released); d > 2*time.Second {
					t.Errorf("the waiter held %v after the release, want within 2s", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter did not get the lock")
			}
			if err := leave(t.Context()); err != nil {
				t.Fatal(err)
			}
			if p.name == "semaphore" {
				if n, _ := rdb.Get(t.Context(), mainKey(name)).Int(); n != 1 {
					t.Fatalf("Available = %d after both released, want its start, 1", n)
				}
			}
		})
	}
}

// countingTake is blocking.take for a counting semaphore of one permit.
func countingTake(hc, wc redis.UniversalClient, name string) (hold, release, wait, leave func(context.Context) error) {
	h, w := semaphore.New(hc, name), semaphore.New(wc, name)
	return func(ctx context.Context) error {
			if err := h.SetPermits(ctx, 1); err != nil {
				return err
			}
			return h.Acquire(ctx, 1)
		}, func(ctx context.Context) error { return h.Release(ctx, 1) },
		func(ctx context.Context) error { return w.Acquire(ctx, 1) },
		func(ctx context.Context) error { return w.Release(ctx, 1) }
}
