package rlock_test

import (
	"context"
	"errors"
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

	cGot := make(chan error, 1)
	go func() { cGot <- c.Lock(t.Context()) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return remoteParks.N() == 1 })
	bGot := make(chan error, 1)
	go func() { bGot <- b.Lock(t.Context()) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return localParks.N() == 1 })

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

// A pass is made before the release runs, so the waiter holds at once:
// if the release then finds the releaser's hold gone from Redis and the
// lock another's, the passed hold ends as lost and the waiter leaves the
// line; if it finds the lock free, the waiter holds it all the same.
func TestPassedHoldLostWithReleaser(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	parks := redistest.CountParks(t, rdb)
	a := rlock.New(rdb, name)
	lost := make(chan error, 1)
	b := rlock.New(rdb, name, rlock.WithOnLost(func(err error) { lost <- err }))
	mustLock(t, a)
	bGot := make(chan error, 1)
	go func() { bGot <- b.Lock(t.Context()) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == 1 })

	// a's hold is gone, and the lock another's; a does not know.
	admin.Del(t.Context(), internal.NewNames(name).Lock())
	admin.HSet(t.Context(), internal.NewNames(name).Lock(), "someone", 1)
	if err := a.Unlock(t.Context()); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("a's Unlock of a hold gone from Redis = %v, want ErrNotHeld", err)
	}
	if err := <-bGot; err != nil {
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
	admin.Del(t.Context(), internal.NewNames(name).Lock())
	assertNoKeys(t, admin, name)

	// The same with the lock found free: b holds it.
	mustLock(t, a)
	go func() { bGot <- b.Lock(t.Context()) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == 2 })
	admin.Del(t.Context(), internal.NewNames(name).Lock())
	if err := a.Unlock(t.Context()); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("a's Unlock of a hold gone from Redis = %v, want ErrNotHeld", err)
	}
	if err := <-bGot; err != nil {
		t.Fatalf("b's Lock = %v, want the pass", err)
	}
	if ok, err := b.IsHeld(t.Context()); !ok || err != nil {
		t.Fatalf("b IsHeld after a pass of a free lock = %v, %v", ok, err)
	}
	select {
	case <-b.Done():
		t.Fatal("b's hold of the free lock ended")
	default:
	}
	mustUnlock(t, b)
	assertNoKeys(t, admin, name)
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
	bGot := make(chan error, 1)
	go func() { bGot <- b.Lock(t.Context()) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == 1 })

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
		got := make(chan error, 1)
		go func() { got <- b.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return parks.N() == int64(i+1) })
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
