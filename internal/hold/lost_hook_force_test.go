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
// handle's op (releaseHold -> finish -> end -> report). A ForceUnlock that waited
// for that op to end what it deleted never returned, and every later
// call of the handle hung; it waits for nothing now (see Tracker.forced).
func TestLostHookForceUnlockDoesNotDeadlock(t *testing.T) {
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
