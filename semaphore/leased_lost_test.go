package semaphore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// A permit the watchdog keeps alive and that is released elsewhere is
// lost for its handle: Done(id) closes and WithOnLost reports ErrLost once.
func TestLeasedOnLost(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	lost := make(chan error, 2)
	l := semaphore.NewLeased(rdb, name, semaphore.WithWatchdogTimeout(300*time.Millisecond),
		semaphore.WithOnLost(func(err error) { lost <- err }))
	if err := l.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	id, err := l.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := semaphore.NewLeased(rdb, name).Release(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, semaphore.ErrLost) {
			t.Fatalf("OnLost(%v), want ErrLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnLost not called for a permit released elsewhere")
	}
	if !redistest.Closed(l.Done(id)) {
		t.Fatal("Done(id) open after the loss")
	}
	if err := l.Release(t.Context(), id); !errors.Is(err, semaphore.ErrNotHeld) {
		t.Fatalf("Release of the lost permit = %v, want ErrNotHeld", err)
	}
	select {
	case err := <-lost:
		t.Fatalf("OnLost called twice: %v", err)
	default:
	}
	rdb.Del(t.Context(), "redisync:{"+name+"}", "redisync:{"+name+"}:permits")
}

// A Renew with lease 0 that finds the permit's Tracker in the handle's
// map with its hold just ended (lost, its Lost hook not run yet) keeps
// the permit alive with a new Tracker: adopted by the one that ended, the
// permit would be renewed by a Tracker that owes its release, which it
// sends with its next renewal, and that the hook then takes out of the
// map, closing Done for a permit the watchdog keeps.
func TestLeasedRenewAcrossLossHook(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb, admin := srv.NewClient(t), srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	const timeout = 300 * time.Millisecond
	l := semaphore.NewLeased(rdb, name, semaphore.WithWatchdogTimeout(timeout))
	reached, let := semaphore.HoldLost(l)
	defer let()
	if err := l.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	id, err := l.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The permit leaves Redis: its next renewal finds it gone, and the
	// hold ends owing its release. Once the hook is held, the permit is
	// put back, as a renewal that went through unseen would have kept it.
	leases := keyspace.NewNames(name).Lock()
	if err := admin.ZRem(ctx, leases, id).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the permit was not lost")
	}
	until := float64(time.Now().Add(time.Minute).UnixMilli())
	if err := admin.ZAdd(ctx, leases, redis.Z{Score: until, Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Renew(ctx, id, 0); err != nil || !ok {
		t.Fatalf("Renew = %v, %v; want true", ok, err)
	}
	let()
	time.Sleep(timeout) // the watchdog's renewals, three of them
	if redistest.Closed(l.Done(id)) {
		t.Error("Done closed for a permit the watchdog keeps")
	}
	if err := admin.ZScore(ctx, leases, id).Err(); err != nil {
		t.Errorf("the renewed permit is gone: %v", err)
	}
	if err := l.Release(ctx, id); err != nil {
		t.Fatalf("Release of the renewed permit: %v", err)
	}
}
