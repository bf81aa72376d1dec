package rlock_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// A waiter rides out a Redis restart: its attempts fail while the server is
// down, and it acquires once the server is back. The holder is told that its
// hold is gone.
func TestWaiterSurvivesRestart(t *testing.T) {
	srv := redistest.Start(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name, rlock.WithWatchdogTimeout(time.Second))
	mustLock(t, holder)
	waiter := rlock.New(srv.NewClient(t), name)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(t.Context()) }()
	admin := srv.NewClient(t)
	redistest.WaitFor(t, 5*time.Second, func() bool {
		return numSub(t, admin, name) == 1
	})
	srv.Restart(t)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not acquire after the restart")
	}
	select {
	case <-holder.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("holder's Done did not close after the restart wiped its lock")
	}
	mustUnlock(t, waiter)
}
