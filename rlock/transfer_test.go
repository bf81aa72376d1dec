package rlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Passing within a process: the release of a handle with a waiter of
// another handle of the same client parked on the lock passes the lock
// to that waiter, which holds without a script of its own, ahead of a
// waiter of another process that parked first; the next release, with
// nobody of the process waiting, grants it to that one.
func TestPassWithinProcess(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	local, remote := srv.NewClient(t), srv.NewClient(t)
	localParks, remoteParks := redistest.CountParks(t, local), redistest.CountParks(t, remote)
	a, b := rlock.New(local, name), rlock.New(local, name)
	c := rlock.New(remote, name)
	mustLock(t, a)

	cGot := lockParked(t, t.Context(), c, remoteParks, 1)
	bGot := lockParked(t, t.Context(), b, localParks, 1)

	redistest.LoadScripts(t, admin) // no NOSCRIPT and resend in the count
	scripts := evalCalls(t, admin)
	mustUnlock(t, a)
	if err := within(t, bGot); err != nil {
		t.Fatal(err)
	}
	if n := evalCalls(t, admin) - scripts; n != 1 {
		t.Errorf("%d scripts ran for the pass, want 1 (the release)", n)
	}
	if ok, err := b.IsHeld(t.Context()); !ok || err != nil {
		t.Fatalf("b IsHeld after the pass = %v, %v", ok, err)
	}
	if n, other := localParks.Notified(), localParks.Unnotified(); n != 1 || other != 0 {
		t.Errorf("b woke %d times notified and %d otherwise, want once, notified", n, other)
	}
	select {
	case err := <-cGot:
		t.Fatalf("c, of another process, returned %v while b held", err)
	default:
	}
	mustUnlock(t, b)
	if err := within(t, cGot); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, c)
	assertNoKeys(t, admin, name)
}

// When a process's run of passes has ended, the release grants the lock
// in Redis past the process's own waiters, even one first in the Redis
// line, to the first waiter of another process: otherwise the lock would
// stay in the process for a fresh run. The waiter passed over keeps its
// place, and is granted the lock next.
func TestRunEndsPastTheProcess(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	local, remote := srv.NewClient(t), srv.NewClient(t)
	localParks, remoteParks := redistest.CountParks(t, local), redistest.CountParks(t, remote)
	a, b, c := rlock.New(local, name), rlock.New(local, name), rlock.New(local, name)
	r := rlock.New(remote, name)
	mustLock(t, a)

	// The Redis line: b, c (a's process), then r.
	bGot := lockParked(t, t.Context(), b, localParks, 1)
	cGot := lockParked(t, t.Context(), c, localParks, 2)
	rGot := lockParked(t, t.Context(), r, remoteParks, 1)
	// A run passes the lock on after its first pass only within 10ms of
	// its start (maxPassTime): past that, a's pass to b is its last.
	time.Sleep(20 * time.Millisecond)

	mustUnlock(t, a)
	if err := within(t, bGot); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, b)
	if err := within(t, rGot); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cGot:
		t.Fatalf("c, of the process whose run ended, returned %v while r held", err)
	default:
	}
	if line := admin.LRange(t.Context(), internal.NewNames(name).Queue(), 0, -1).Val(); len(line) != 1 {
		t.Fatalf("line %v while r holds, want c's place alone", line)
	}
	mustUnlock(t, r)
	if err := within(t, cGot); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, c)
	assertNoKeys(t, admin, name)
}

// A pass is made before the release runs, so the waiter holds at once:
// if the release then finds the releaser's hold gone from Redis (or not
// the count it expects), the passed hold ends as lost, and the waiter
// leaves the line. (Should the release's reply come before the waiter
// took the pass, the waiter goes on waiting instead.)
func TestPassedHoldLostWithReleaser(t *testing.T) {
	for _, how := range []string{"gone", "mismatch"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.SharedServer(t)
			admin := srv.NewClient(t)
			name := redistest.UniqueName(t)
			n := internal.NewNames(name)
			rdb := srv.NewClient(t)
			parks := redistest.CountParks(t, rdb)
			a := rlock.New(rdb, name)
			lost := make(chan error, 1)
			b := rlock.New(rdb, name, rlock.WithOnLost(func(err error) { lost <- err }))
			mustLock(t, a)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			bGot := lockParked(t, ctx, b, parks, 1)

			holder := redistest.Holders(t.Context(), admin, n.Lock())
			if how == "gone" {
				// a's hold is gone, the lock another's; a does not know.
				admin.Del(t.Context(), n.Lock())
				admin.HSet(t.Context(), n.Lock(), "someone", 1)
			} else {
				for owner := range holder { // Redis counts two levels for a
					admin.HIncrBy(t.Context(), n.Lock(), owner, 1)
				}
			}
			err := a.Unlock(t.Context())
			if how == "gone" && !errors.Is(err, rlock.ErrNotHeld) {
				t.Fatalf("a's Unlock of a hold gone from Redis = %v, want ErrNotHeld", err)
			}
			select {
			case err := <-bGot:
				if err != nil {
					t.Fatalf("b's Lock = %v, want the pass", err)
				}
				select {
				case <-b.Done():
				case <-time.After(time.Second):
					t.Fatal("b's Done still open a second after the release failed to pass the lock")
				}
				if err := <-lost; !errors.Is(err, rlock.ErrLost) {
					t.Fatalf("b's loss hook got %v, want ErrLost", err)
				}
				if err := b.Unlock(t.Context()); !errors.Is(err, rlock.ErrNotHeld) {
					t.Fatalf("b's Unlock after the loss = %v, want ErrNotHeld", err)
				}
			case <-time.After(time.Second):
				cancel() // still waiting: the reply came first
				if err := <-bGot; !errors.Is(err, context.Canceled) {
					t.Fatalf("b's Lock = %v, want its ctx's error", err)
				}
			}
			internal.AwaitTidied(t.Context()) // a wait that ended leaves the line in the background
			if line := admin.LRange(t.Context(), n.Queue(), 0, -1).Val(); len(line) != 0 {
				t.Fatalf("line %v after b's wait ended, want empty", line)
			}
			admin.Del(t.Context(), n.Lock())
			assertNoKeys(t, admin, name)
		})
	}
}

// A release that passes the lock within the process and whose reply is
// lost is resent by the engine: the resend finds the releaser's hold
// gone and reads as success, the waiter's hold stands, and nobody else
// holds.
func TestPassSurvivesLostReply(t *testing.T) {
	direct, proxy, via := redistest.ProxiedServer(t)
	name := redistest.UniqueName(t)
	parks := redistest.CountParks(t, via)
	a, b := rlock.New(via, name), rlock.New(via, name)
	mustLock(t, a)
	bGot := lockParked(t, t.Context(), b, parks, 1)

	dropped := proxy.DropReply(redistest.ScriptCall(t, "rlock_unlock.lua", internal.NewNames(name).Lock()))
	mustUnlock(t, a)
	<-dropped
	if err := <-bGot; err != nil {
		t.Fatal(err)
	}
	holders := redistest.Holders(t.Context(), direct, internal.NewNames(name).Lock())
	if len(holders) != 1 {
		t.Fatalf("lock hash %v, want b alone", holders)
	}
	if ok, err := b.IsHeld(t.Context()); !ok || err != nil {
		t.Fatalf("b IsHeld = %v, %v", ok, err)
	}
	select {
	case <-b.Done():
		t.Fatal("b's hold ended after the resend")
	default:
	}
	mustUnlock(t, b)
	assertNoKeys(t, direct, name)
}

// A waiter that gives up as the lock is passed to it gives it back, which
// passes it on: the lock is never left held by nobody until a lease runs
// out.
func TestPassToWaiterThatGivesUp(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	parks := redistest.CountParks(t, rdb)
	a, b := rlock.New(rdb, name), rlock.New(rdb, name)
	for i := range 20 {
		mustLock(t, a)
		ctx, cancel := context.WithCancel(t.Context())
		got := lockParked(t, ctx, b, parks, int64(i+1))
		go cancel()
		mustUnlock(t, a)
		if err := <-got; err == nil {
			mustUnlock(t, b) // it held before it saw the cancellation
		}
		cancel()
		redistest.WaitFor(t, time.Second, func() bool {
			ok, err := a.IsLocked(t.Context())
			return err == nil && !ok
		})
	}
}

// within receives from ch, failing the test if nothing comes within 5s.
func within(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no result within 5s")
		return nil
	}
}

// Local handoffs and passes between handles count together: once the
// process has held the lock past maxPassTime, and passed it on once, the
// release goes to the Redis line, whatever waits in the process.
func TestPassesCountWithLocalHandoffs(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	local, remote := srv.NewClient(t), srv.NewClient(t)
	localParks, remoteParks := redistest.CountParks(t, local), redistest.CountParks(t, remote)
	a, b := rlock.New(local, name), rlock.New(local, name)
	c := rlock.New(remote, name)
	var mu sync.Mutex
	var order []string
	section := func(who string) {
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
		time.Sleep(15 * time.Millisecond) // past maxPassTime
	}
	var wg sync.WaitGroup
	run := func(who string, m *rlock.Mutex) {
		wg.Go(func() {
			if err := m.Lock(t.Context()); err != nil {
				t.Error(err)
				return
			}
			section(who)
			if err := m.Unlock(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	mustLock(t, a)
	run("c", c)
	redistest.WaitFor(t, 5*time.Second, func() bool { return remoteParks.N() == 1 })
	run("b1", b)
	redistest.WaitFor(t, 5*time.Second, func() bool { return localParks.N() == 1 })
	run("a2", a)
	redistest.WaitFor(t, 5*time.Second, func() bool { return rlock.Queued(a) == 1 })
	run("b2", b)
	redistest.WaitFor(t, 5*time.Second, func() bool { return rlock.Queued(b) == 1 })
	section("a1")
	mustUnlock(t, a)
	wg.Wait()
	if i := slices.Index(order, "c"); i != 2 {
		t.Fatalf("order of holds %v, want c third: after a1 and one pass", order)
	}
}
