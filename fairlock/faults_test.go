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

// Unit tier: replies lost after the script ran, and scripts that fail.

// An Unlock whose reply is lost retries, and reads the retry's answer
// knowing the first may have gone through: success, the hold released.
// The Unlock of a re-entered level sends nothing: re-entry is counted in
// the process, and Redis holds one level.
func TestUnlockReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	m := fairlock.New(rdb, "lost-unlock")
	err := m.Do(t.Context(), func(ctx context.Context) error {
		mustLockCtx(t, ctx, m)
		faults.LoseReplies(1)
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the inner level = %v, want nil", err)
		}
		if n := redisLevels(t, rdb, "lost-unlock"); n != 1 || faults.Pending() != 1 {
			t.Fatalf("%d levels in Redis after one Unlock of two (sent a script: %v)", n, faults.Pending() == 0)
		}
		return nil // Do's own Unlock, the last, has its reply lost
	})
	if err != nil {
		t.Fatalf("last Unlock of Do with its reply lost = %v, want nil", err)
	}
	if !redistest.Closed(m.Done()) {
		t.Fatal("Done open after Do's last Unlock")
	}
	mustLock(t, m)
	faults.LoseReplies(1)
	if err := m.Unlock(t.Context()); err != nil {
		t.Fatalf("last Unlock with its reply lost = %v, want nil", err)
	}
	if locked, _ := m.IsLocked(t.Context()); locked || !redistest.Closed(m.Done()) {
		t.Fatalf("after the last Unlock: locked %v, Done closed %v", locked, redistest.Closed(m.Done()))
	}
	assertNoKeys(t, rdb, "lost-unlock")
}

// A failed Unlock of the last level stops the renewals: Done closes and
// the lock frees itself when its lease runs out.
func TestFailedUnlockStopsRenewalMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	const lease = time.Second
	m := fairlock.New(rdb, "failed-unlock", fairlock.WithWatchdogTimeout(lease))
	mustLock(t, m)
	faults.Refuse(true)
	if err := m.Unlock(t.Context()); err == nil {
		t.Fatal("Unlock with every script failing succeeded")
	}
	faults.Refuse(false)
	if !redistest.Closed(m.Done()) {
		t.Fatal("Done open after the last Unlock failed")
	}
	c := perclient.Attach(rdb)
	defer c.Detach()
	if n := c.Watchdog.Len(); n != 0 {
		t.Fatalf("the watchdog still renews %d holds", n)
	}
	mr.FastForward(lease)
	if locked, _ := m.IsLocked(t.Context()); locked {
		t.Fatal("the lock outlived its lease")
	}
	if err := m.Unlock(t.Context()); !errors.Is(err, fairlock.ErrNotHeld) {
		t.Fatalf("Unlock after the lease ran out = %v, want ErrNotHeld", err)
	}
}

// An acquisition whose reply is lost is undone even though ctx did not
// end: TryLock reports the error and leaves nothing held.
func TestTryLockReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	m := fairlock.New(rdb, "lost-try")
	mustLock(t, m) // loads the scripts
	mustUnlock(t, m)
	faults.LoseReplies(1)
	ok, err := m.TryLock(t.Context())
	if ok || err == nil {
		t.Fatalf("TryLock with its reply lost = %v, %v; want an error", ok, err)
	}
	if locked, _ := m.IsLocked(t.Context()); locked || !redistest.Closed(m.Done()) {
		t.Fatalf("after the failed TryLock: locked %v, Done closed %v", locked, redistest.Closed(m.Done()))
	}
	// Lock retries by itself and ends up with exactly one level.
	faults.LoseReplies(1)
	mustLock(t, m)
	if n := redisLevels(t, rdb, "lost-try"); n != 1 {
		t.Fatalf("%d levels in Redis after a Lock whose first reply was lost, want 1", n)
	}
	mustUnlock(t, m)
	assertNoKeys(t, rdb, "lost-try")
}
