package multilock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// fake is a Locker of another library: an in-process lock that takes
// delay to answer and reports a fixed lease.
type fake struct {
	name  string
	delay time.Duration
	lease time.Duration

	mu   sync.Mutex
	held bool
	done chan struct{}
}

func newFake(name string, delay, lease time.Duration) *fake {
	return &fake{name: name, delay: delay, lease: lease}
}

func (f *fake) Name() string                   { return f.name }
func (f *fake) Lease() (time.Duration, bool)   { return f.lease, true }
func (f *fake) Lock(ctx context.Context) error { return errors.New("fake: Lock not used by a quorum") }
func (f *fake) TryLock(ctx context.Context) (bool, error) {
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held {
		return false, nil
	}
	f.held, f.done = true, make(chan struct{})
	return true, nil
}

func (f *fake) Unlock(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.held {
		return errors.New("fake: not held")
	}
	f.held = false
	close(f.done)
	return nil
}

func (f *fake) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.held {
		return closedChan
	}
	return f.done
}

func (f *fake) isHeld() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

var _ multilock.Leaser = (*fake)(nil)

func TestQuorumValidityOfFixedLeases(t *testing.T) {
	ctx := t.Context()
	// A lease of 1s leaves a budget of 500ms - 12ms: answers within 5ms
	// count.
	fast := multilock.NewQuorum(newFake("f", 5*time.Millisecond, time.Second), newFake("f", 5*time.Millisecond, time.Second), newFake("f", 5*time.Millisecond, time.Second))
	if ok, err := fast.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock of fast members = %v, %v", ok, err)
	}
	if err := fast.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A lease of 100ms leaves 100/2 - 3ms = 47ms: members answering in
	// 200ms never count, and nothing stays held.
	slow := []*fake{newFake("s", 200*time.Millisecond, 100*time.Millisecond), newFake("s", 200*time.Millisecond, 100*time.Millisecond), newFake("s", 200*time.Millisecond, 100*time.Millisecond)}
	g := multilock.NewQuorum(slow[0], slow[1], slow[2])
	ok, err := g.TryLock(ctx)
	if ok || err == nil || !strings.Contains(err.Error(), "no answer within 47ms") {
		t.Fatalf("TryLock of members slower than the budget = %v, %v; want false and no answer within 47ms", ok, err)
	}
	for _, f := range slow {
		if f.isHeld() {
			t.Fatal("a slow member stays held after the round gave up on it")
		}
	}
}

func TestQuorumCancelledLockLeavesNothingMini(t *testing.T) {
	mrs, rdbs := minis(t, 3)
	ctx := t.Context()
	a, b := rlock.New(rdbs[0], "c"), rlock.New(rdbs[1], "c")
	mustLock(t, a)
	mustLock(t, b)
	g := quorum(rdbs, "c")
	lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := g.Lock(lctx); !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), `multilock: lock ["c" "c" "c"]: `) {
		t.Fatalf("Lock against a majority held elsewhere = %v, want the deadline naming the group", err)
	}
	// The give-back of the free server's member may finish in the
	// background once the Lock's ctx has ended: it is bounded.
	if !perclient.AwaitTidied(ctx) {
		t.Fatal("the clean-ups of the cancelled Lock did not finish")
	}
	if keys := mrs[2].Keys(); len(keys) != 0 {
		t.Fatalf("the free server keeps %v after a cancelled Lock", keys)
	}
	mustUnlock(t, a)
	mustUnlock(t, b)
}

// A Group is shared by goroutines as a sync.Mutex is: an unprotected
// counter stays exact.
func TestGroupSharedByGoroutinesMini(t *testing.T) {
	_, rdbs := minis(t, 3)
	for name, g := range map[string]*multilock.Group{
		"all":    multilock.New(rlock.New(rdbs[0], "s1"), rlock.New(rdbs[1], "s2")),
		"quorum": quorum(rdbs, "s"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			n := 0
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 10 {
						if err := g.Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						n++ // guarded by g: the handles' local lines order these
						if err := g.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n != 40 {
				t.Fatalf("counter = %d, want 40", n)
			}
			redistest.WaitFor(t, time.Second, func() bool { return redistest.Closed(g.Done()) })
		})
	}
}
