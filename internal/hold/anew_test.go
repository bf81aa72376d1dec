package hold_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

// anewLock is fake's lock behind a hold.Lock, whose acquire script
// records what each attempt was told of the handle's last hold
// (Asking.Anew) and, while refuse is set, refuses.
type anewLock struct {
	fake
	refuse bool
	asked  []bool // Asking.Anew of every attempt
}

const anewLease = time.Second

func newAnewLock(t *testing.T) (*anewLock, *hold.Lock) {
	_, rdb := redistest.Mini(t)
	f := &anewLock{}
	l := hold.NewLock(hold.Kind{
		Base:    hold.NewBase("mem", rdb, redistest.UniqueName(t)),
		Keeping: hold.Keeping{WatchdogTimeout: anewLease},
		Channel: func(hold.Mode) string { return "mem" },
		Fencing: true,
		Acquire: f.acquire,
		Release: f.release,
		Renew: func(context.Context, redis.Scripter) func() (bool, error) {
			return func() (bool, error) { return f.held(hold.Exclusive) > 0, nil }
		},
	})
	return f, l
}

// acquire is the acquire script: a hold of the owner's that the caller
// does not count (held differs) is reported as it stands, as Redis
// reports a hold an earlier attempt took; else a level is added.
func (f *anewLock) acquire(_ context.Context, m hold.Mode, held int64, a hold.Asking) (hold.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, a.Anew)
	switch {
	case f.refuse:
		return hold.Grant{Wait: anewLease}, nil
	case f.levels[m] == held:
		f.levels[m]++
	}
	return hold.Grant{OK: true, Levels: f.levels, Token: 1}, nil
}

// lastAsked is what the latest attempt was told.
func (f *anewLock) lastAsked(t *testing.T) bool {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) == 0 {
		t.Fatal("no attempt reached the acquire script")
	}
	return f.asked[len(f.asked)-1]
}

// releasing reports whether a release script has been sent.
func (f *anewLock) releasing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls) > 0
}

func (f *anewLock) setRefuse(refuse bool) {
	f.mu.Lock()
	f.refuse = refuse
	f.mu.Unlock()
}

func (f *anewLock) expire() {
	f.mu.Lock()
	f.levels = hold.Levels{}
	f.mu.Unlock()
}

func mustTryLock(t *testing.T, l *hold.Lock) {
	t.Helper()
	if ok, err := l.TryLock(t.Context(), hold.Exclusive); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
}

// loseToWatchdog ends the handle's hold as the watchdog finds it lost.
func loseToWatchdog(t *testing.T, f *anewLock, l *hold.Lock) {
	t.Helper()
	done := l.Done()
	f.expire()
	select {
	case <-done:
	case <-time.After(5 * anewLease):
		t.Fatal("the watchdog did not find the hold lost")
	}
}

// The handle's next attempt adopts the hold it finds anew (Asking.Anew)
// only after a hold it gave up: lost, or whose release failed, which may
// still stand in Redis with steps under it under way. A released hold is
// gone, and leaves no mark. The hold that attempt begins clears the mark:
// an attempt after its release is told nothing.
func TestAnewAfterHoldEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, f *anewLock, l *hold.Lock)
		anew bool
	}{
		{"released", func(t *testing.T, _ *anewLock, l *hold.Lock) {
			if err := l.Unlock(t.Context(), hold.Exclusive); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"lost, found by the watchdog", loseToWatchdog, true},
		{"lost, found by Unlock", func(t *testing.T, f *anewLock, l *hold.Lock) {
			f.expire()
			if err := l.Unlock(t.Context(), hold.Exclusive); !errors.Is(err, internal.ErrNotHeld) {
				t.Fatalf("Unlock of an expired hold = %v, want ErrNotHeld", err)
			}
		}, true},
		{"lost while its Unlock ran", func(t *testing.T, f *anewLock, l *hold.Lock) {
			slow := make(chan struct{})
			f.failNext(fakeFail{block: slow})
			unlocked := make(chan error, 1)
			go func() { unlocked <- l.Unlock(t.Context(), hold.Exclusive) }()
			for start := time.Now(); !f.releasing(); time.Sleep(time.Millisecond) {
				if time.Since(start) > 5*time.Second {
					t.Fatal("the Unlock sent no release")
				}
			}
			loseToWatchdog(t, f, l)
			close(slow)
			if err := <-unlocked; !errors.Is(err, internal.ErrNotHeld) {
				t.Fatalf("Unlock of a hold lost meanwhile = %v, want ErrNotHeld", err)
			}
		}, true},
		{"release failed (abandoned)", func(t *testing.T, f *anewLock, l *hold.Lock) {
			unreachable := fakeFail{err: errLostReply}
			f.failNext(unreachable, unreachable, unreachable)
			if err := l.Unlock(t.Context(), hold.Exclusive); !errors.Is(err, errLostReply) {
				t.Fatalf("Unlock = %v, want the failure", err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, l := newAnewLock(t)
			mustTryLock(t, l)
			if f.lastAsked(t) {
				t.Fatal("a new handle's first attempt was told to adopt anew")
			}
			tc.end(t, f, l)
			if !redistest.Closed(l.Done()) {
				t.Fatal("the hold did not end")
			}
			mustTryLock(t, l)
			if got := f.lastAsked(t); got != tc.anew {
				t.Fatalf("the next attempt's Anew = %v, want %v", got, tc.anew)
			}
			if err := l.Unlock(t.Context(), hold.Exclusive); err != nil {
				t.Fatal(err)
			}
			mustTryLock(t, l)
			if f.lastAsked(t) {
				t.Fatal("Anew still set after a hold began and was released")
			}
			if err := l.Unlock(t.Context(), hold.Exclusive); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A refused (exclusive) attempt clears the mark: the owner holds nothing
// in Redis, so no hold given up is left to adopt, and a grant answering
// the wait is a hold the caller never had. A read-write lock's refused
// read leaves it: TestRWLockAfterGivenUpHold in internal/faulttest.
func TestAnewClearedByRefusal(t *testing.T) {
	f, l := newAnewLock(t)
	mustTryLock(t, l)
	loseToWatchdog(t, f, l)
	f.setRefuse(true)
	if ok, err := l.TryLock(t.Context(), hold.Exclusive); ok || err != nil {
		t.Fatalf("refused TryLock = %v, %v", ok, err)
	}
	if !f.lastAsked(t) {
		t.Fatal("the attempt after the loss was not told to adopt anew")
	}
	f.setRefuse(false)
	mustTryLock(t, l)
	if f.lastAsked(t) {
		t.Fatal("Anew still set after a refused attempt")
	}
	if err := l.Unlock(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
}
