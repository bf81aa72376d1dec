package semaphore_test

import (
	"errors"
	"testing"
	"time"

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
