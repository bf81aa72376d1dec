package semaphore_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestOwedUndoRepaidMini: a TryAcquire whose reply is lost and whose undo
// never reaches Redis returns an error with its permits still taken; the
// handle's next call sends the undo again first, so they come back.
func TestOwedUndoRepaidMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	ctx := t.Context()
	s := semaphore.New(rdb, "owed")
	if err := s.SetPermits(ctx, 5); err != nil {
		t.Fatal(err)
	}
	// The acquire runs, its reply is lost, and every script after it
	// (the undo) fails before it reaches Redis.
	faults.LoseReplies(1, redistest.LoseCancelling(func() { faults.Refuse(true) }))
	if ok, err := s.TryAcquire(ctx, 2); ok || err == nil {
		t.Fatalf("TryAcquire with its reply lost and its undo failed = %v, %v; want an error", ok, err)
	}
	faults.Refuse(false)
	wantAvailable(t, s, 3) // taken, and no undo reached Redis
	if ok, err := s.TryAcquire(ctx, 1); !ok || err != nil {
		t.Fatalf("next TryAcquire = %v, %v", ok, err)
	}
	wantAvailable(t, s, 4) // the owed undo gave the 2 back first
	if err := s.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wantAvailable(t, s, 5)
}
