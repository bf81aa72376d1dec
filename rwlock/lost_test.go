package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Unit tier, continued: replies lost after the script ran, and scripts
// that fail, in both modes.

// side is one mode of the lock, as the tests drive it.
type side struct {
	name    string
	lock    func(*rwlock.RWMutex, context.Context) error
	tryLock func(*rwlock.RWMutex, context.Context) (bool, error)
	unlock  func(*rwlock.RWMutex, context.Context) error
	do      func(*rwlock.RWMutex, context.Context, func(context.Context) error) error
	field   string // the prefix of its hold count's field
}

var sides = []side{
	{"read", (*rwlock.RWMutex).RLock, (*rwlock.RWMutex).TryRLock, (*rwlock.RWMutex).RUnlock, (*rwlock.RWMutex).RDo, "r:"},
	{"write", (*rwlock.RWMutex).Lock, (*rwlock.RWMutex).TryLock, (*rwlock.RWMutex).Unlock, (*rwlock.RWMutex).Do, "w:"},
}

// An unlock whose reply is lost retries, and reads the retry's answer
// knowing the first may have gone through: success, the hold released.
func TestUnlockReplyLostMini(t *testing.T) {
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			_, rdb := redistest.Mini(t)
			faults := redistest.AddScriptFaults(rdb)
			ctx := t.Context()
			rw := rwlock.New(rdb, "lost-unlock")
			err := s.do(rw, ctx, func(ctx context.Context) error {
				if err := s.lock(rw, ctx); err != nil { // a re-entry
					return err
				}
				// The unlock of the re-entered level sends nothing:
				// re-entry is counted in the process.
				if err := s.unlock(rw, ctx); err != nil {
					t.Fatalf("unlock of the inner level = %v, want nil", err)
				}
				if got := field(t, rdb, "lost-unlock", s.field); got != "1" {
					t.Fatalf("hold count %s in Redis after a re-entry and its unlock, want 1", got)
				}
				if redistest.Closed(rw.Done()) {
					t.Fatal("Done closed while a level remains")
				}
				faults.LoseReplies(1) // the reply of Do's own, last, unlock
				return nil
			})
			if err != nil {
				t.Fatalf("last unlock with its reply lost = %v, want nil", err)
			}
			if !redistest.Closed(rw.Done()) {
				t.Fatal("Done open after the last unlock")
			}
			assertNoKeysMini(t, rdb, "lost-unlock")
		})
	}
}

// A failed unlock of the last level stops the renewals: Done closes and
// the lock frees itself when its lease runs out.
func TestFailedUnlockStopsRenewalMini(t *testing.T) {
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			mr, rdb := redistest.Mini(t)
			faults := redistest.AddScriptFaults(rdb)
			ctx := t.Context()
			const lease = time.Second
			rw := rwlock.New(rdb, "failed-unlock", rwlock.WithWatchdogTimeout(lease))
			if err := s.lock(rw, ctx); err != nil {
				t.Fatal(err)
			}
			faults.Refuse(true)
			if err := s.unlock(rw, ctx); err == nil {
				t.Fatal("unlock with every script failing succeeded")
			}
			faults.Refuse(false)
			if !redistest.Closed(rw.Done()) {
				t.Fatal("Done open after the last unlock failed")
			}
			c := perclient.Attach(rdb)
			defer c.Detach()
			if n := c.Watchdog.Len(); n != 0 {
				t.Fatalf("the watchdog still renews %d holds", n)
			}
			mr.FastForward(lease)
			if locked, _ := rw.IsLocked(ctx); locked {
				t.Fatal("the lock outlived its lease")
			}
			if err := s.unlock(rw, ctx); !errors.Is(err, rwlock.ErrNotHeld) {
				t.Fatalf("unlock after the lease ran out = %v, want ErrNotHeld", err)
			}
		})
	}
}

// A failed unlock of one mode while the other is held keeps the hold: the
// handle still wants the other mode kept alive.
func TestFailedUnlockKeepsOtherModeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	rw := rwlock.New(rdb, "half")
	err := rw.Do(t.Context(), func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil { // a downgrade
			return err
		}
		faults.Refuse(true)
		if err := rw.Unlock(ctx); err == nil {
			t.Fatal("Unlock with every script failing succeeded")
		}
		faults.Refuse(false)
		if redistest.Closed(rw.Done()) {
			t.Fatal("Done closed while the read level is still wanted")
		}
		return nil
	})
	// The failed Unlock was the write hold's last level: it is over for
	// the handle (Do's own Unlock finds nothing), and Redis frees the
	// write level when its lease runs out; the read hold goes on.
	if !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want ErrNotHeld from its Unlock after the failed one", err)
	}
	mustRUnlock(t, rw)
	if _, err := rw.ForceUnlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertNoKeysMini(t, rdb, "half")
}

// An acquisition whose reply is lost is undone even though ctx did not
// end: the Try call reports the error and leaves nothing held; a blocking
// call retries by itself and ends up with exactly one level.
func TestAcquireReplyLostMini(t *testing.T) {
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			_, rdb := redistest.Mini(t)
			faults := redistest.AddScriptFaults(rdb)
			ctx := t.Context()
			rw := rwlock.New(rdb, "lost-try")
			mustRLock(t, rw) // loads the scripts
			mustRUnlock(t, rw)
			mustLock(t, rw)
			mustUnlock(t, rw)
			faults.LoseReplies(1)
			if ok, err := s.tryLock(rw, ctx); ok || err == nil {
				t.Fatalf("try with its reply lost = %v, %v; want an error", ok, err)
			}
			if locked, _ := rw.IsLocked(ctx); locked || !redistest.Closed(rw.Done()) {
				t.Fatalf("after the failed try: locked %v, Done closed %v", locked, redistest.Closed(rw.Done()))
			}
			faults.LoseReplies(1)
			if err := s.lock(rw, ctx); err != nil {
				t.Fatal(err)
			}
			if got := field(t, rdb, "lost-try", s.field); got != "1" {
				t.Fatalf("hold count %s after a lock whose first reply was lost, want 1", got)
			}
			if err := s.unlock(rw, ctx); err != nil {
				t.Fatal(err)
			}
			assertNoKeysMini(t, rdb, "lost-try")
		})
	}
}

// A done ctx is matched by the error, whatever go-redis made of it.
func TestCancelledErrorsMatchCtxMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rw := rwlock.New(rdb, "cancelled")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, s := range sides {
		if _, err := s.tryLock(rw, ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s try on a done ctx = %v, want context.Canceled", s.name, err)
		}
		if err := s.lock(rw, ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s lock on a done ctx = %v, want context.Canceled", s.name, err)
		}
	}
	assertNoKeysMini(t, rdb, "cancelled")
}
