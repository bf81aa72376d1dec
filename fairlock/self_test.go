package fairlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
)

// A second Lock on a handle that holds, with a ctx that carries no hold,
// waits; when its ctx ends, the error says that the handle holds the lock
// and how to re-enter.
func TestSecondLockOnHeldHandleSaysSoMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	m := fairlock.New(rdb, redistest.UniqueName(t))
	mustLock(t, m)
	defer mustUnlock(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := m.Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "this handle holds the lock") ||
		!strings.Contains(err.Error(), "the ctx that Do passes to fn") {
		t.Fatalf("second Lock = %v; want the deadline, saying the handle holds the lock and how to re-enter", err)
	}
}
