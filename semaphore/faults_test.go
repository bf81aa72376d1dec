package semaphore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Unit tier: replies lost after the script ran, and scripts that fail.

// A Release or AddPermits whose reply is lost is retried under the same
// receipt: the permits are added once.
func TestReleaseReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	s := semaphore.New(rdb, "lost-release")
	if err := s.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	faults.LoseReplies(1)
	if err := s.Release(t.Context(), 2); err != nil {
		t.Fatalf("Release with its reply lost = %v, want nil", err)
	}
	wantAvailable(t, s, 3)
	faults.LoseReplies(2)
	if err := s.AddPermits(t.Context(), -1); err != nil {
		t.Fatalf("AddPermits with two replies lost = %v, want nil", err)
	}
	wantAvailable(t, s, 2)
	if faults.Pending() != 0 {
		t.Fatal("no reply was lost: the fault was not injected")
	}
}

// TrySetPermits, SetPermits and Drain whose replies are lost are retried
// under the same receipt: each reports what its first run did and changes
// the count once.
func TestSetAndDrainReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	s := semaphore.New(rdb, "lost-set")
	ctx := t.Context()
	faults.LoseReplies(1)
	if ok, err := s.TrySetPermits(ctx, 5); !ok || err != nil {
		t.Fatalf("TrySetPermits with its reply lost = %v, %v; want true: it set the count", ok, err)
	}
	wantAvailable(t, s, 5)
	if ok, err := s.TryAcquire(ctx, 2); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	faults.LoseReplies(1)
	if err := s.SetPermits(ctx, 4); err != nil {
		t.Fatalf("SetPermits with its reply lost = %v", err)
	}
	wantAvailable(t, s, 4)
	faults.LoseReplies(2)
	if n, err := s.Drain(ctx); n != 4 || err != nil {
		t.Fatalf("Drain with two replies lost = %d, %v; want the 4 permits it took", n, err)
	}
	wantAvailable(t, s, 0)
	if faults.Pending() != 0 {
		t.Fatal("not every reply was lost: the faults were not injected")
	}
}

// An acquisition whose reply is lost is given back even though ctx did not
// end; a waiting Acquire then takes its permits exactly once, also when the
// reply of the cancellation is lost too.
func TestAcquireReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	s := semaphore.New(rdb, "lost-acquire")
	if err := s.SetPermits(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	faults.LoseReplies(1)
	if ok, err := s.TryAcquire(t.Context(), 2); ok || err == nil {
		t.Fatalf("TryAcquire with its reply lost = %v, %v; want an error", ok, err)
	}
	wantAvailable(t, s, 3)
	for lost := 1; lost <= 2; lost++ { // the acquire's reply, then the undo's too
		faults.LoseReplies(lost)
		if err := s.Acquire(t.Context(), 2); err != nil {
			t.Fatalf("Acquire with %d replies lost = %v", lost, err)
		}
		wantAvailable(t, s, 1)
		mustRelease(t, s, 2)
	}
}

// Leased TrySetPermits, SetPermits and AddPermits whose replies are lost
// are retried under the same receipt: each reports what its first run did
// and changes the total once.
func TestLeasedPermitsReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	l := semaphore.NewLeased(rdb, "lost-leased-set")
	ctx := t.Context()
	faults.LoseReplies(1)
	if ok, err := l.TrySetPermits(ctx, 3); !ok || err != nil {
		t.Fatalf("TrySetPermits with its reply lost = %v, %v; want true: it set the total", ok, err)
	}
	wantLeasedAvailable(t, l, 3)
	faults.LoseReplies(2)
	if err := l.AddPermits(ctx, 2); err != nil {
		t.Fatalf("AddPermits with two replies lost = %v", err)
	}
	wantLeasedAvailable(t, l, 5)
	mustTryAcquireLeased(t, l, time.Minute)
	faults.LoseReplies(1)
	if err := l.SetPermits(ctx, 4); err != nil {
		t.Fatalf("SetPermits with its reply lost = %v", err)
	}
	wantLeasedAvailable(t, l, 3)
	if faults.Pending() != 0 {
		t.Fatal("not every reply was lost: the faults were not injected")
	}
}

func TestLeasedReleaseReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	l := semaphore.NewLeased(rdb, "lost-leased")
	if err := l.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	id, err := l.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	done := l.Done(id)
	if redistest.Closed(done) {
		t.Fatal("Done closed while the watchdog keeps the permit")
	}
	faults.LoseReplies(1)
	if err := l.Release(t.Context(), id); err != nil {
		t.Fatalf("Release with its reply lost = %v, want nil", err)
	}
	wantLeasedAvailable(t, l, 1)
	if !redistest.Closed(done) {
		t.Fatal("Done open after Release")
	}
	if err := l.Release(t.Context(), id); !errors.Is(err, semaphore.ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
}

// A Release that fails stops the renewals: the permit returns to the pool
// when its lease runs out.
func TestLeasedFailedReleaseStopsRenewalMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	now := time.Now()
	mr.SetTime(now)
	faults := redistest.AddScriptFaults(rdb)
	const lease = time.Second
	l := semaphore.NewLeased(rdb, "failed-leased", semaphore.WithWatchdogTimeout(lease))
	if err := l.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	id, err := l.Acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	faults.Refuse(true)
	if err := l.Release(t.Context(), id); err == nil {
		t.Fatal("Release with every script failing succeeded")
	}
	faults.Refuse(false)
	if !redistest.Closed(l.Done(id)) {
		t.Fatal("Done open after Release failed")
	}
	c := perclient.Attach(rdb)
	defer c.Detach()
	if n := c.Watchdog.Len(); n != 0 {
		t.Fatalf("the watchdog still renews %d permits", n)
	}
	mr.SetTime(now.Add(lease + time.Millisecond))
	wantLeasedAvailable(t, l, 1)
}

// The release a failed Release owes is sent before the handle's next
// call: the permit returns to the pool before its lease runs out.
func TestLeasedFailedReleaseIsRepaidMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	l := semaphore.NewLeased(rdb, "repaid-leased")
	if err := l.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	id := mustTryAcquireLeased(t, l, 0)
	faults.Refuse(true)
	if err := l.Release(t.Context(), id); err == nil {
		t.Fatal("Release with every script failing succeeded")
	}
	faults.Refuse(false)
	wantLeasedAvailable(t, l, 0) // a query sends nothing owed
	if _, ok, err := l.TryAcquire(t.Context(), time.Minute); !ok || err != nil {
		t.Fatalf("TryAcquire after the failed Release = %v, %v; want the permit it owed back", ok, err)
	}
}

func TestLeasedTryAcquireReplyLostMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	l := semaphore.NewLeased(rdb, "lost-leased-try")
	if err := l.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	faults.LoseReplies(1)
	if _, ok, err := l.TryAcquire(t.Context(), time.Minute); ok || err == nil {
		t.Fatalf("TryAcquire with its reply lost = %v, %v; want an error", ok, err)
	}
	wantLeasedAvailable(t, l, 1)
	c := perclient.Attach(rdb)
	defer c.Detach()
	if n := c.Watchdog.Len(); n != 0 {
		t.Fatalf("the watchdog renews %d permits", n)
	}
}
