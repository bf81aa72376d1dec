package rlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// A second Lock on a handle that holds, with a ctx that carries no hold,
// waits as a second sync.Mutex.Lock would; when its ctx ends, the error
// says that the handle holds the lock and how to re-enter. Another
// goroutine's Lock still waits for the Unlock and then holds.
func TestSecondLockOnHeldHandleSaysSoMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	m := rlock.New(rdb, redistest.UniqueName(t))
	mustLock(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := m.Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "this handle holds the lock") ||
		!strings.Contains(err.Error(), "the ctx that Do passes to fn") {
		t.Fatalf("second Lock = %v; want the deadline, saying the handle holds the lock and how to re-enter", err)
	}
	t.Log(err)
	got := make(chan error, 1)
	go func() { got <- m.Lock(t.Context()) }()
	select {
	case err := <-got:
		t.Fatalf("another goroutine's Lock returned %v while the handle held", err)
	case <-time.After(50 * time.Millisecond):
	}
	mustUnlock(t, m)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, m)
}

// A Lock that gives up while another handle holds gets no such hint.
func TestLockBehindAnotherHandleNoHintMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(rdb, name)
	mustLock(t, holder)
	defer mustUnlock(t, holder)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := rlock.New(rdb, name).Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "this handle") {
		t.Fatalf("Lock behind another handle = %v; want the deadline alone", err)
	}
}
