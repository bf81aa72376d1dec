package fairlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
)

// Unit tier: an acquire whose reply is lost when ctx ends.

// loseReply is a go-redis hook that, once armed, lets the next command run
// on the server but withholds its reply until the caller's ctx ends: the
// outcome of a script is unknown to the caller.
type loseReply struct{ armed atomic.Bool }

func (h *loseReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmd)
		}
		_ = next(ctx, cmd)
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

func (h *loseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestReplyLostMidScriptMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	hook := &loseReply{}
	rdb.AddHook(hook)
	m := fairlock.New(rdb, "lost")
	lockLosing := func() {
		t.Helper()
		hook.armed.Store(true)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
		}
	}

	// Load the scripts first: a withheld EVALSHA that failed with
	// NOSCRIPT would have changed nothing.
	mustLock(t, m)
	mustUnlock(t, m)

	// A first acquisition that went through: given back.
	lockLosing()
	if locked, _ := m.IsLocked(t.Context()); locked {
		t.Fatal("the acquisition whose reply was lost is still held")
	}
	select {
	case <-m.Done():
	default:
		t.Fatal("Done open: the handle believes it holds the lock")
	}

	// A re-entry that went through: only that level is given back.
	mustLock(t, m)
	lockLosing()
	if n, _ := m.HoldCount(t.Context()); n != 1 {
		t.Fatalf("HoldCount = %d after a lost re-entry, want 1", n)
	}
	mustUnlock(t, m)

	// Joining the line, reply lost: Lock leaves the line.
	holder := fairlock.New(rdb, "lost")
	mustLock(t, holder)
	lockLosing()
	if q, z := line(t, rdb, "lost"); len(q)+len(z) != 0 {
		t.Fatalf("line %v, deadlines %v after the failed Lock", q, z)
	}
	mustUnlock(t, holder)
	assertNoKeys(t, rdb, "lost")
}
