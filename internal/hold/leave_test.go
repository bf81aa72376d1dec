package hold_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// hookLock is the in-memory read-write lock behind a Lock whose acquire
// and release of mode m run the hooks first (nil: none).
type hookLock struct {
	f         *recLock
	l         *hold.Lock
	onAcquire atomic.Pointer[func(m hold.Mode)]
	onRelease atomic.Pointer[func(m hold.Mode)]
}

func newHookLock(t *testing.T, handoff bool) *hookLock {
	_, rdb := redistest.Mini(t)
	r := &hookLock{f: &recLock{held: map[string]*[2]bool{}, tags: map[string]uint64{}}}
	k := r.f.kind(rdb, t.Name())
	k.LocalHandoff = handoff
	acquire, release := k.Acquire, k.Release
	k.Acquire = func(ctx context.Context, m hold.Mode, a hold.Asking) (hold.Grant, error) {
		if h := r.onAcquire.Load(); h != nil {
			(*h)(m)
		}
		return acquire(ctx, m, a)
	}
	k.Release = func(ctx context.Context, m hold.Mode, id string, tag uint64, giveBack bool) (hold.Released, error) {
		if h := r.onRelease.Load(); h != nil && !giveBack {
			(*h)(m)
		}
		return release(ctx, m, id, tag, giveBack)
	}
	r.l = hold.NewLock(k)
	t.Cleanup(r.l.Tracker().Drop)
	return r
}

func (r *hookLock) check(t *testing.T, after string) {
	t.Helper()
	checkRecords(t, r.l, r.f, after)
}

// free checks that the handle holds nothing, Redis has nothing of it once
// what it owes is repaid, and the local line is free.
func (r *hookLock) free(t *testing.T, after string) {
	t.Helper()
	r.check(t, after)
	if err := r.l.Tracker().Repay(t.Context()); err != nil {
		t.Errorf("after %s: repay: %v", after, err)
	}
	if held, _ := r.f.snapshot(); len(held) != 0 {
		t.Errorf("after %s: Redis holds %v", after, held)
	}
	if !redistest.Closed(r.l.Done()) {
		t.Errorf("after %s: Done open", after)
	}
	if !r.l.GateFree(hold.Exclusive) {
		t.Errorf("after %s: the local line is not free", after)
	}
}

// Do's Unlock races a re-entry of its hold from a goroutine fn started:
// whichever comes first, each level taken is released once, the last
// one in Redis, and nothing is left held or owed.
func TestUnlockRacingReentry(t *testing.T) {
	r := newHookLock(t, false)
	for i := range 300 {
		var wg sync.WaitGroup
		err := r.l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ok, err := r.l.TryLock(ctx, hold.Exclusive); ok && err == nil {
					if err := r.l.Unlock(context.WithoutCancel(ctx), hold.Exclusive); err != nil {
						t.Errorf("run %d: inner Unlock: %v", i, err)
					}
				}
			}()
			return nil
		})
		wg.Wait()
		if err != nil {
			t.Fatalf("run %d: Do: %v", i, err)
		}
		r.free(t, "the race")
		if t.Failed() {
			t.Fatalf("run %d", i)
		}
	}
}

// Two Unlocks of one plain write hold racing: one releases it, the other
// reports ErrNotHeld; the line's units come back once.
func TestDoubleUnlockRacing(t *testing.T) {
	for _, handoff := range []bool{false, true} {
		r := newHookLock(t, handoff)
		for i := range 200 {
			if err := r.l.Lock(t.Context(), hold.Exclusive); err != nil {
				t.Fatal(err)
			}
			var errsSeen [2]error
			var wg sync.WaitGroup
			for j := range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); errsSeen[j] = r.l.Unlock(t.Context(), hold.Exclusive) }()
			}
			wg.Wait()
			nils := 0
			for _, err := range errsSeen {
				if err == nil {
					nils++
				} else if !errors.Is(err, errs.ErrNotHeld) {
					t.Fatalf("run %d: Unlock: %v", i, err)
				}
			}
			if nils != 1 {
				t.Errorf("run %d (handoff %v): Unlocks = %v; want one nil, one ErrNotHeld", i, handoff, errsSeen)
			}
			r.free(t, "the Unlocks")
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// Do's write Unlock cannot have the handle's op within ReleaseTimeout (a
// downgrade's script holds it): it is abandoned, the write level owed,
// and the hold, which has no other level, ends. The downgrade's reply,
// for a hold that ended, is given back; the next Lock repays the owed
// release and takes the lock.
func TestAbandonedWriteUnlockDuringDowngrade(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out ReleaseTimeout")
	}
	r := newHookLock(t, false)
	entered, unblock := r.blockAcquire(hold.Shared)
	var wg sync.WaitGroup
	var downErr error
	err := r.l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
		wg.Add(1)
		go func() { defer wg.Done(); _, downErr = r.l.TryLock(context.WithoutCancel(ctx), hold.Shared) }()
		<-entered
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do = %v; want its Unlock's deadline", err)
	}
	if !redistest.Closed(r.l.Done()) {
		t.Error("Done open after the hold's last level was abandoned")
	}
	unblock()
	wg.Wait()
	if !errors.Is(downErr, errs.ErrLost) {
		t.Errorf("downgrade = %v; want ErrLost (its hold ended while it ran)", downErr)
	}
	r.check(t, "the downgrade")
	if err := r.l.Lock(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
	if err := r.l.Unlock(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
	r.free(t, "the next hold")
}

// Local handoff with waiters whose ctx ends as the hold is handed: the
// handed hold always ends with a taker or released, and nothing is left.
func TestHandoffWithCancelledWaiters(t *testing.T) {
	r := newHookLock(t, true)
	for i := range 200 {
		if err := r.l.Lock(t.Context(), hold.Exclusive); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for j := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(j+1)*time.Duration(i%7+1)*300*time.Microsecond)
				defer cancel()
				if err := r.l.Lock(ctx, hold.Exclusive); err == nil {
					_ = r.l.Unlock(ctx, hold.Exclusive)
				}
			}()
		}
		for deadline := time.Now().Add(5 * time.Millisecond); r.l.Queued() == 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Microsecond)
		}
		if err := r.l.Unlock(t.Context(), hold.Exclusive); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		redistest.WaitFor(t, 5*time.Second, func() bool {
			held, _ := r.f.snapshot()
			return len(held) == 0 && r.l.GateFree(hold.Exclusive)
		})
		r.free(t, "the handoffs")
		if t.Failed() {
			t.Fatalf("run %d", i)
		}
	}
}

// blockAcquire makes r's next acquire of mode m wait, holding the
// handle's op, until the returned release is called; entered is closed
// once it waits.
func (r *hookLock) blockAcquire(m hold.Mode) (entered <-chan struct{}, release func()) {
	in, block := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(got hold.Mode) {
		if got == m {
			once.Do(func() { close(in); <-block })
		}
	}
	r.onAcquire.Store(&hook)
	return in, func() { r.onAcquire.Store(nil); close(block) }
}

// The CHANGELOG's first race: Do's Unlock has looked its record up (depth
// 1) and waits for the handle's op (a downgrade's script holds it) while
// another goroutine re-enters the hold. The Unlock then takes off one
// level in the process and sends nothing; the re-entered holder keeps
// the write level in Redis, and its own Unlock releases it.
func TestUnlockAfterLookupReenteredSendsNothing(t *testing.T) {
	r := newHookLock(t, false)
	entered, unblock := r.blockAcquire(hold.Shared)
	var fctx context.Context
	var wg sync.WaitGroup
	var downErr error
	unlocked := make(chan error, 1)
	go func() {
		unlocked <- r.l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
			fctx = ctx
			wg.Add(1)
			go func() { defer wg.Done(); _, downErr = r.l.TryLock(ctx, hold.Shared) }()
			<-entered
			return nil // Do's Unlock now waits for op
		})
	}()
	<-entered
	// Do's Unlock is past its lookup once it waits for op; give it the
	// moment to get there.
	time.Sleep(50 * time.Millisecond)
	if ok, err := r.l.TryLock(fctx, hold.Exclusive); !ok || err != nil {
		t.Fatalf("re-entry: %v %v", ok, err)
	}
	unblock()
	wg.Wait()
	if downErr != nil {
		t.Fatalf("downgrade: %v", downErr)
	}
	if err := <-unlocked; err != nil {
		t.Fatalf("Do: %v", err)
	}
	r.check(t, "Do's Unlock")
	if held, _ := r.f.snapshot(); len(held) != 1 || !held[r.l.HoldID()][hold.Exclusive] {
		t.Fatalf("Redis holds %v after Do's Unlock; want the write level the re-entry holds", held)
	}
	if n, _ := r.l.HoldCount(fctx); n != 1 {
		t.Fatalf("HoldCount = %d; want the re-entered level", n)
	}
	if err := r.l.Unlock(fctx, hold.Exclusive); err != nil {
		t.Fatalf("the re-entered level's Unlock: %v", err)
	}
	if err := r.l.Unlock(t.Context(), hold.Shared); err != nil {
		t.Fatalf("RUnlock of the downgraded read: %v", err)
	}
	r.free(t, "the Unlocks")
}

// The CHANGELOG's third change: a downgrade whose write record left
// while its script ran (here handed over to a waiting Lock, with local
// handoff on) owes the read level it took: nobody holds it, and it is
// released before the handle's next script.
func TestDowngradeAfterHandoffIsOwed(t *testing.T) {
	r := newHookLock(t, true)
	entered, unblock := r.blockAcquire(hold.Shared)
	var wg sync.WaitGroup
	var downErr error
	waiter := make(chan error, 1)
	err := r.l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
		wg.Add(1)
		go func() { defer wg.Done(); _, downErr = r.l.TryLock(context.WithoutCancel(ctx), hold.Shared) }()
		<-entered
		go func() { waiter <- r.l.Lock(t.Context(), hold.Exclusive) }()
		redistest.WaitFor(t, time.Second, func() bool { return r.l.Queued() == 1 })
		return nil // handed over to the waiter
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("the waiter's Lock: %v", err)
	}
	unblock()
	wg.Wait()
	if !errors.Is(downErr, errs.ErrNotHeld) {
		t.Fatalf("downgrade = %v; want ErrNotHeld (its write record left)", downErr)
	}
	r.check(t, "the downgrade")
	if !r.l.Tracker().Owes() {
		t.Fatal("the downgrade's read level is not owed")
	}
	if err := r.l.Unlock(t.Context(), hold.Exclusive); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
	r.free(t, "the waiter's Unlock")
}

// The CHANGELOG's second change: two RUnlocks of one downgraded read
// racing, under a write hold that goes on. One counts the read out and
// releases the read level; the other finds no read left to count out and
// reports ErrNotHeld without sending a release.
func TestDoubleRUnlockUnderWriteSendsOnce(t *testing.T) {
	r := newHookLock(t, false)
	var reads atomic.Int32
	hook := func(m hold.Mode) {
		if m == hold.Shared {
			reads.Add(1)
		}
	}
	r.onRelease.Store(&hook)
	for i := range 200 {
		reads.Store(0)
		err := r.l.Do(t.Context(), hold.Exclusive, func(ctx context.Context) error {
			if ok, err := r.l.TryLock(ctx, hold.Shared); !ok || err != nil {
				t.Fatalf("downgrade: %v %v", ok, err)
			}
			var got [2]error
			var wg sync.WaitGroup
			for j := range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); got[j] = r.l.Unlock(context.WithoutCancel(ctx), hold.Shared) }()
			}
			wg.Wait()
			if (got[0] == nil) == (got[1] == nil) || !errors.Is(errors.Join(got[0], got[1]), errs.ErrNotHeld) {
				t.Errorf("run %d: RUnlocks = %v; want one nil, one ErrNotHeld", i, got)
			}
			if n := reads.Load(); n != 1 {
				t.Errorf("run %d: %d read releases sent; want 1", i, n)
			}
			r.check(t, "the RUnlocks")
			return nil
		})
		if err != nil {
			t.Fatalf("run %d: Do: %v", i, err)
		}
		r.free(t, "Do")
		if t.Failed() {
			t.FailNow()
		}
	}
}
