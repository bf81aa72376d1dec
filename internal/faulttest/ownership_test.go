package faulttest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// mutexLike is what the ownership tests need of a lock handle.
type mutexLike interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

var mutexKinds = []struct {
	name string
	new  func(rdb redis.UniversalClient, name string) mutexLike
}{
	{"rlock", func(rdb redis.UniversalClient, name string) mutexLike { return rlock.New(rdb, name) }},
	{"fairlock", func(rdb redis.UniversalClient, name string) mutexLike { return fairlock.New(rdb, name) }},
	{"rwlock", func(rdb redis.UniversalClient, name string) mutexLike { return rwlock.New(rdb, name) }},
}

// One handle shared by 20 goroutines, and another client's handle shared
// by 20 more, keep an unprotected read-sleep-write counter exact: a
// shared handle excludes its goroutines as a sync.Mutex does.
func TestSharedHandleExcludesGoroutines(t *testing.T) {
	srv := redistest.SharedServer(t)
	a, b := srv.NewClient(t), srv.NewClient(t)
	for _, k := range mutexKinds {
		t.Run(k.name, func(t *testing.T) {
			name := redistest.UniqueName(t)
			handles := []mutexLike{k.new(a, name), k.new(b, name)}
			const goroutines, increments = 40, 200
			var counter, done atomic.Int64 // counter is read and written apart on purpose
			var wg sync.WaitGroup
			for g := range goroutines {
				m := handles[g%2]
				wg.Go(func() {
					for done.Add(1) <= increments {
						if err := m.Lock(t.Context()); err != nil {
							t.Error(err)
							return
						}
						v := counter.Load()
						time.Sleep(100 * time.Microsecond)
						counter.Store(v + 1)
						if err := m.Unlock(t.Context()); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if got := counter.Load(); got != increments {
				t.Fatalf("counter = %d after %d increments: goroutines sharing a handle overlapped", got, increments)
			}
			leftovers(t, a, name)
		})
	}
}

// Readers sharing one rwlock handle overlap, as sync.RWMutex readers do.
func TestSharedHandleReadersOverlap(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	rw := rwlock.New(rdb, name)
	const readers = 8
	var inside, most atomic.Int64
	all := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			if err := rw.RLock(t.Context()); err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if n == readers {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(5 * time.Second):
			}
			inside.Add(-1)
			if err := rw.RUnlock(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() != readers {
		t.Fatalf("at most %d of %d readers of one handle held at once, want all", most.Load(), readers)
	}
	leftovers(t, rdb, name)
}

// A nested Lock whose ctx carries no hold waits until its ctx ends (it
// would deadlock, as a second sync.Mutex.Lock does) and leaves nothing
// behind; through Do's ctx it re-enters, to depth 3, which Redis sees as
// one hold.
func TestNestedLockWaitsReentryThroughCtx(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	for _, k := range []string{"rlock", "fairlock"} {
		t.Run(k, func(t *testing.T) {
			name := redistest.UniqueName(t)
			var m interface {
				mutexLike
				HoldCount(ctx context.Context) (int, error)
			}
			if k == "rlock" {
				m = rlock.New(rdb, name)
			} else {
				m = fairlock.New(rdb, name)
			}
			err := m.Do(t.Context(), func(ctx context.Context) error {
				plain, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
				defer cancel()
				if err := m.Lock(plain); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("nested Lock without the hold's ctx = %v, want it to wait until its ctx ends", err)
				}
				for depth := 2; depth <= 3; depth++ {
					if err := m.Lock(ctx); err != nil {
						return err
					}
					if n, err := m.HoldCount(ctx); n != depth || err != nil {
						t.Fatalf("HoldCount = %d, %v; want %d", n, err, depth)
					}
				}
				if n := hashLevels(name)(ctx, rdb); n != 1 {
					t.Fatalf("%d levels in Redis at depth 3, want 1: re-entry is counted in the process", n)
				}
				for range 2 {
					if err := m.Unlock(ctx); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			leftovers(t, rdb, name)
		})
	}
}

// Goroutines sharing one handle cost no more Redis commands per critical
// section than as many handles do: the local line adds no traffic.
func TestSharedHandleCostsNoMore(t *testing.T) {
	srv := redistest.SharedServer(t)
	const goroutines, sections = 16, 160
	run := func(shared bool) float64 {
		rdb := srv.NewClient(t)
		traffic := redistest.CountTraffic(rdb)
		name := redistest.UniqueName(t)
		one := rlock.New(rdb, name)
		var left atomic.Int64
		left.Store(sections)
		var wg sync.WaitGroup
		for range goroutines {
			m := one
			if !shared {
				m = rlock.New(rdb, name)
			}
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if err := m.Lock(t.Context()); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(200 * time.Microsecond)
					if err := m.Unlock(t.Context()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(traffic.Commands()) / sections
	}
	handles, shared := run(false), run(true)
	t.Logf("commands per critical section: %.1f with %d handles, %.1f with one shared", handles, goroutines, shared)
	if shared > handles*1.1 {
		t.Fatalf("one shared handle costs %.1f commands per critical section, %d handles %.1f", shared, goroutines, handles)
	}
}

// The sync.RWMutex hammer, on a read-write lock: readers and writers
// sharing one handle, on a handle each, and across two clients. A writer
// adds 10000 to an activity count and must find it 10000 (alone); a
// reader adds 1 and must find no writer.
func TestRWMutexHammer(t *testing.T) {
	srv := redistest.SharedServer(t)
	a, b := srv.NewClient(t), srv.NewClient(t)
	for _, layout := range []string{"one shared handle", "a handle each", "two clients"} {
		t.Run(layout, func(t *testing.T) {
			name := redistest.UniqueName(t)
			shared := []*rwlock.RWMutex{rwlock.New(a, name), rwlock.New(b, name)}
			handle := func(g int) *rwlock.RWMutex {
				switch layout {
				case "one shared handle":
					return shared[0]
				case "two clients":
					return shared[g%2]
				}
				return rwlock.New(a, name)
			}
			var activity atomic.Int64
			const goroutines, rounds = 10, 15
			var wg sync.WaitGroup
			for g := range goroutines {
				rw := handle(g)
				writer := g%3 == 0
				wg.Go(func() {
					for range rounds {
						if writer {
							if err := rw.Lock(t.Context()); err != nil {
								t.Error(err)
								return
							}
							if n := activity.Add(10000); n != 10000 {
								t.Errorf("a writer found activity %d: not alone", n)
							}
							time.Sleep(100 * time.Microsecond)
							activity.Add(-10000)
							if err := rw.Unlock(t.Context()); err != nil {
								t.Error(err)
							}
							continue
						}
						if err := rw.RLock(t.Context()); err != nil {
							t.Error(err)
							return
						}
						if n := activity.Add(1); n >= 10000 {
							t.Errorf("a reader found activity %d: a writer inside", n)
						}
						time.Sleep(100 * time.Microsecond)
						activity.Add(-1)
						if err := rw.RUnlock(t.Context()); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			leftovers(t, a, name)
		})
	}
}

// A hold lost during Do (its fixed lease ran out) frees the handle's
// line; the Unlock with the lost hold's ctx then reports ErrNotHeld and
// must not release the plain hold another goroutine took since.
func TestLostDoHoldDoesNotReleaseANewerHold(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	m := rlock.New(rdb, name, rlock.WithLeaseTime(300*time.Millisecond))
	var taken chan error
	err := m.Do(t.Context(), func(ctx context.Context) error {
		<-ctx.Done() // the lease ran out: the hold is lost
		taken = make(chan error, 1)
		go func() { taken <- m.Lock(t.Context()) }()
		return <-taken // another goroutine's plain hold, through the freed line
	})
	if !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Do after its hold was lost = %v, want ErrNotHeld from its Unlock", err)
	}
	if held, _ := m.IsHeld(t.Context()); !held {
		t.Fatal("the lost hold's Unlock released the plain hold taken since")
	}
	if ok, _ := rlock.New(rdb, name).TryLock(t.Context()); ok {
		t.Fatal("another handle got the lock while the plain hold is held")
	}
	if err := m.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	leftovers(t, rdb, name)
}

// A re-entry through the ctx of a hold that was force-unlocked elsewhere
// (Redis grants a first acquisition) gives that level back and fails: the
// handle's line stays sound, and nothing is left held.
func TestReentryAfterForceUnlock(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	m := rlock.New(rdb, name)
	err := m.Do(t.Context(), func(ctx context.Context) error {
		if _, err := rlock.New(rdb, name).ForceUnlock(t.Context()); err != nil {
			return err
		}
		if err := m.Lock(ctx); !errors.Is(err, rlock.ErrNotHeld) && !errors.Is(err, context.Canceled) {
			t.Errorf("re-entry through a force-unlocked hold's ctx = %v, want an error", err)
		}
		if locked, _ := m.IsLocked(t.Context()); locked {
			t.Error("the failed re-entry left a hold in Redis")
		}
		return nil
	})
	if !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want ErrNotHeld from its Unlock", err)
	}
	// The line is free and sound: a plain Lock and Unlock go through.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	leftovers(t, rdb, name)
}
