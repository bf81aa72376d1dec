package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// TestRLockDeadlineDuringSiblingLeaveMini: an RLock that starts while a
// sibling goroutine's failed wait withdraws the handle's announcement waits
// for that withdrawal (which may not take the new wait's announcement
// away), but no longer than its own ctx allows, however slow Redis is.
func TestRLockDeadlineDuringSiblingLeaveMini(t *testing.T) {
	type slowLeaveKey struct{}
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	n := keyspace.NewNames("slow")
	w, r := rwlock.New(rdb, "slow"), rwlock.New(rdb, "slow")
	mustLock(t, w)

	actx, cancelA := context.WithCancel(context.WithValue(ctx, slowLeaveKey{}, true))
	leaving := make(chan struct{}, 1)
	rdb.AddHook(ctxHook{before: func(cctx context.Context) {
		// A command on A's values after A's ctx ended: its Leave. Redis
		// is slow: it answers after the cleanup ctx ends.
		if cctx.Value(slowLeaveKey{}) != nil && actx.Err() != nil {
			select {
			case leaving <- struct{}{}:
			default:
			}
			<-cctx.Done()
		}
	}})
	aDone := make(chan error, 1)
	go func() { aDone <- r.RLock(actx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.Exists(n.Readers()) })
	cancelA()
	<-leaving

	bctx, cancelB := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelB()
	start := time.Now()
	err := r.RLock(bctx)
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's RLock = %v", err)
	}
	<-aDone
	t.Logf("B's RLock with a 50ms deadline returned after %v", d)
	if d > 500*time.Millisecond {
		t.Errorf("B's RLock with a 50ms deadline returned after %v: it waited out A's withdrawal", d)
	}
	mustUnlock(t, w)
}
