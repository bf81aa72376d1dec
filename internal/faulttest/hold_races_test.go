package faulttest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Races of the hold-id engine that a review found by reading
// internal/hold and the scripts: each test failed 5 of 5 runs before its
// fix (see the CHANGELOG).

// A plain RLock of a second goroutine of the handle, sent under
// the current hold's id while another goroutine holds a plain read, is
// in flight when the watchdog declares that hold lost. Its attempt names
// no hold it was sent for (sentFor is nil: it is "a further read level
// of the current hold"), so acquired applies its reply to whatever is
// current (nothing) and begins the given-up hold again under its old id,
// with every level Redis reported, while end already owes the old level's
// release by the same id. The owed release then takes one level from
// Redis, the next RUnlock mismatches (read as a release that went
// through before) and the handle keeps counting a level that Redis keeps
// too: renewed for as long as the process lives, writers shut out.
func TestReadInFlightAcrossLossIsNotRevived(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease41))

	// Goroutine A: a plain read hold.
	if err := rw.RLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	const stand = 2 * lease41
	standFor(t.Context(), admin, name, stand) // a slow server clock
	if !faults.holdRenewals(lease41) {
		t.Fatal("no renewal failed: the fault was not injected")
	}
	// Goroutine B: another plain read, sent under the current hold's id
	// and held on its way out until the watchdog has given the hold up.
	gate := faults.holdNextScript()
	res := make(chan error, 1)
	go func() { res <- rw.RLock(context.WithoutCancel(t.Context())) }()
	gate.mustCatch(t, "B's RLock sent nothing to hold")
	redistest.WaitFor(t, 3*lease41, func() bool { return isClosed(rw.Done()) })
	faults.failPipes.Store(false)
	faults.let(gate)
	err := <-res
	t.Logf("B's RLock: %v; handle's Done closed: %v; lock hash %v", err, isClosed(rw.Done()),
		admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())
	// Every caller releases what it believes it holds (A's RUnlock may
	// find nothing: its hold was lost).
	if err == nil {
		t.Logf("B's RUnlock: %v", rw.RUnlock(t.Context()))
	}
	t.Logf("A's RUnlock: %v", rw.RUnlock(t.Context()))

	if !isClosed(rw.Done()) {
		t.Error("Done is open after every caller returned: the given-up hold was revived")
	}
	if gone, keys, hash := keysGoneWithin(t.Context(), admin, name, stand+lease41+time.Second); !gone {
		t.Errorf("keys of the name still there after the slow clock let the given-up hold go: %v, lock hash %v", keys, hash)
	}
	other := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease41))
	if ok, err := other.TryLock(t.Context()); err != nil || !ok {
		t.Errorf("another client's write TryLock: %v %v, want the lock", ok, err)
	} else {
		_ = other.Unlock(t.Context())
	}
}

// A release of one level of a hold in flight when the watchdog declares
// the hold lost: end sees the release in flight (going) and keeps the
// loss for the release to report, owing the hold's other levels; the
// release then removes its one level, on a hold that is no longer
// current. The rest must be owed: without it, the handle's next hold (a
// new id) waited behind its own given-up level for as long as the server
// kept it, instead of sending its release first. A hold has one level per
// mode (readers are counted in the process), so the release in flight is
// a write Do's, under the read level it took (a downgrade).
func TestReleaseAcrossLossOwesTheRest(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease41))

	const stand = 4 * lease41
	var gate *scriptGate
	armed := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- rw.Do(t.Context(), func(ctx context.Context) error {
			if err := rw.RLock(ctx); err != nil { // a downgrade: outlives the write level
				return err
			}
			standFor(t.Context(), admin, name, stand) // a slow server clock
			if !faults.holdRenewals(lease41) {
				return errors.New("no renewal failed: the fault was not injected")
			}
			gate = faults.holdNextScript() // Do's write release
			close(armed)
			return nil
		})
	}()
	select {
	case <-armed:
	case err := <-res:
		t.Fatalf("Do returned before its release was held: %v", err)
	}
	gate.mustCatch(t, "Do's release was not held")
	redistest.WaitFor(t, 3*lease41, func() bool { return isClosed(rw.Done()) })
	faults.failPipes.Store(false)
	faults.let(gate)
	t.Logf("Do's write release (sent before the loss, run after it): %v", <-res)
	t.Logf("the downgraded read's RUnlock: %v", rw.RUnlock(t.Context()))
	t.Logf("lock hash after every caller returned: %v", admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())

	// The handle's next call sends what it owes for the given-up hold
	// first: its own TryLock must not be refused by its own old level.
	ok, err := rw.TryLock(t.Context())
	if err != nil || !ok {
		t.Errorf("the handle's next write TryLock: %v %v, want the lock (its given-up read level was not owed); lock hash %v",
			ok, err, admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())
	} else {
		_ = rw.Unlock(t.Context())
	}
}

// A copy of a given-up wait's refused attempt, run late (within
// its deadline) while the handle's next wait is in line, writes the old
// hold id into the handle's place: the acquire script's later() looks
// for a later hold of the handle in the lock hash, not for a later place.
// The release then grants the lock to the retired id; the waiter sees a
// grant that is not to its last attempt and gives it back by that id,
// which grants the lock to the next waiter in line. The handle, first in
// line, loses its turn to a waiter that came after it: fairlock's strict
// order is broken (and an election publishes the given-up campaign's
// value as the leader's, under a new term, for as long as the give-back
// takes).
func TestLateAttemptKeepsLaterWaitsPlace(t *testing.T) {
	direct, proxy, via := redistest.ProxiedServer(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	holder := fairlock.New(direct, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	h := fairlock.New(via, name)
	held := proxy.Hold(scriptOn(t, "fairlock_acquire.lua", name))
	gctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := h.Lock(gctx); err == nil {
		t.Fatal("a Lock whose attempt never reached Redis succeeded")
	}
	if !redistest.Closed(held.Caught()) {
		t.Fatal("the attempt was not held: the fault was not injected")
	}
	queue := keyspace.NewNames(name).Queue()
	order := make(chan string, 2)
	go func() {
		if err := h.Lock(ctx); err == nil {
			order <- "first in line"
		}
	}()
	redistest.WaitFor(t, 2*time.Second, func() bool { return direct.LLen(ctx, queue).Val() == 1 })
	behind := fairlock.New(direct, name)
	go func() {
		if err := behind.Lock(ctx); err == nil {
			order <- "second in line"
		}
	}()
	redistest.WaitFor(t, 2*time.Second, func() bool { return direct.LLen(ctx, queue).Val() == 2 })
	for _, k := range nameKeys(ctx, direct, name) {
		t.Logf("before: %s %s", k, direct.Get(ctx, k).Val())
	}
	if reply, err := held.Deliver(ctx); err != nil || reply[0] == '-' {
		t.Fatalf("the late attempt did not run: %q, %v", reply, err)
	}
	for _, k := range nameKeys(ctx, direct, name) {
		t.Logf("after: %s %s", k, direct.Get(ctx, k).Val())
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case who := <-order:
		if who != "first in line" {
			t.Errorf("the lock went to the waiter second in line before the first (the late copy of a given-up attempt took the first's place)")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nobody got the lock")
	}
	// Tidy: whoever holds releases; the other then gets it.
	_ = h.Unlock(ctx)
	_ = behind.Unlock(ctx)
	select {
	case <-order:
	case <-time.After(5 * time.Second):
	}
	_ = h.Unlock(ctx)
	_ = behind.Unlock(ctx)
}

// TestReadInFlightAcrossLossIsNotRevived when Redis lost the given-up
// hold (its keys gone, not kept by a slow clock): the second goroutine's
// read attempt begins a fresh read level under the old id, which acquired
// made the handle's hold again, while the release end owed for the
// given-up hold names the same id. The watchdog's next renewal sent that
// owed release in the background, and it removed the new reader's level:
// a writer of another client took the lock while the reader's RLock had
// returned nil and its Done was still open.
func TestReadInFlightAcrossDataLossIsNotReleasedUnderIt(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease41))

	if err := rw.RLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !faults.holdRenewals(lease41) {
		t.Fatal("no renewal failed: the fault was not injected")
	}
	gate := faults.holdNextScript()
	res := make(chan error, 1)
	go func() { res <- rw.RLock(context.WithoutCancel(t.Context())) }()
	gate.mustCatch(t, "B's RLock sent nothing to hold")
	redistest.WaitFor(t, 3*lease41, func() bool { return isClosed(rw.Done()) })
	for _, k := range nameKeys(t.Context(), admin, name) {
		admin.Del(t.Context(), k) // Redis lost the hold
	}
	faults.failPipes.Store(false)
	faults.let(gate)
	if err := <-res; err != nil {
		t.Skipf("the read attempt was not taken: %v", err)
	}
	done := rw.Done()
	if isClosed(done) {
		t.Skip("the handle did not take the read level as its hold")
	}
	other := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease41))
	deadline := time.Now().Add(2 * lease41)
	for time.Now().Before(deadline) {
		ok, err := other.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			open := !isClosed(done)
			_ = other.Unlock(t.Context())
			if open {
				t.Fatal("another client took the write lock while this handle's reader holds (RLock returned nil, Done open): double hold")
			}
			t.Logf("the write lock was taken only after the reader's Done closed (lost)")
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if isClosed(done) {
		t.Error("the reader's hold, taken after every fault had ended, was lost: its release was sent by the engine under it")
	}
	_ = rw.RUnlock(t.Context())
}
