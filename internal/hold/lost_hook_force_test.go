package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// A Lost hook that calls the handle's ForceUnlock: the hook runs on the
// goroutine of the release that found the hold gone, which holds the
// handle's op (releaseOnOp -> end -> report), and ForceUnlock now waits
// for that op (dropForced) with the hook's ctx. With no deadline the
// release never returns, and the handle's op is never free again: every
// later Lock, Unlock and ForceUnlock of the handle hangs. Before
// ForceUnlock took the op, the same hook only made the Unlock slower.
// The hook's doc says it must not block; ForceUnlock does I/O, so this
// is a contract edge, but the failure went from slow to a permanent
// deadlock of the handle.
func TestLostHookForceUnlockDoesNotDeadlock(t *testing.T) {
	t.Skip("defect (low, contract edge): a Lost hook calling ForceUnlock deadlocks the handle: ForceUnlock waits for the op the hook's caller holds")
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	var m *rlock.Mutex
	m = rlock.New(srv.NewClient(t), name, rlock.WithOnLost(func(error) {
		_, _ = m.ForceUnlock(context.Background())
	}))
	if err := m.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	admin.Del(t.Context(), keyspace.NewNames(name).Lock()) // the hold, gone unseen
	done := make(chan error, 1)
	go func() { done <- m.Unlock(t.Context()) }() // finds it gone: Lost
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Unlock hung: the Lost hook's ForceUnlock waits for the op that Unlock holds")
	}
}
