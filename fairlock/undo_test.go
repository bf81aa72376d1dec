package fairlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
)

// Unit tier: an acquire whose reply is lost when ctx ends.

func TestReplyLostMidScriptMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	m := fairlock.New(rdb, "lost")
	lockLosing := func(ctxs ...context.Context) {
		t.Helper()
		// The next script runs on the server, but its reply is withheld
		// until the caller's ctx ends: the caller cannot know its outcome.
		faults.LoseReplies(1, redistest.LoseUntilDone())
		parent := t.Context()
		if len(ctxs) > 0 {
			parent = ctxs[0] // a hold's ctx: a re-entry
		}
		ctx, cancel := context.WithTimeout(parent, 100*time.Millisecond)
		defer cancel()
		if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
		}
		if faults.Pending() != 0 {
			t.Fatal("Lock ran no script: no reply was lost")
		}
		perclient.AwaitTidied(t.Context()) // the give-back runs in the background
	}

	// Load the scripts first, so that the script whose reply is lost is
	// one EVALSHA (a NOSCRIPT refusal ran nothing and is not counted).
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
	err := m.Do(t.Context(), func(ctx context.Context) error {
		lockLosing(ctx)
		if n := redisLevels(t, rdb, "lost"); n != 1 {
			t.Fatalf("%d levels in Redis after a lost re-entry, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

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
