package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// The five defects of issue 41, one named test each, for every level each
// one hit. Every fault is injected by the proxy (a refused connection, a
// stall, a held script call) or by setting a key's expiry, never by
// sleeping for a race to happen: each run takes the same path.

// lease41 is the watchdog timeout of these tests: long enough that a busy
// 2-core machine under -race renews in time, short enough that a hold
// given up or a lease run out costs the test a few seconds.
const lease41 = 1500 * time.Millisecond

// failInnerUnlock runs Do on l's side of h and, inside it, re-enters
// with Do's ctx and unlocks that inner level through a refusing proxy
// (the connection refused: a release sent then cannot have run). It
// returns the token Do's hold had and Do's error. Re-entry is counted in
// the process, so the inner Unlock sends nothing and succeeds; an engine
// that sent it would see it fail, and either way no level may be left.
func failInnerUnlock(t *testing.T, l netLevel, h *netHandle, proxy *redistest.Proxy) (uint64, error) {
	t.Helper()
	ops := l.ops(h)
	var token uint64
	err := ops.Do(t.Context(), func(ctx context.Context) error {
		if err := ops.Lock(ctx); err != nil {
			t.Fatalf("re-entry: %v", err)
		}
		token = h.Token()
		proxy.Refuse(true)
		proxy.Cut()
		defer proxy.Refuse(false)
		if err := ops.Unlock(ctx); err != nil {
			t.Logf("the inner Unlock through a refusing proxy: %v", err)
		}
		return nil
	})
	return token, err
}

// Defect 1: a failed Unlock of a re-entered level left a level nobody
// unlocks, renewed for as long as the process lived (Done open, every
// other client refused).
func TestFailedInnerUnlockLeavesNoLevel(t *testing.T) {
	for _, l := range netAllLevels {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t)
			admin := srv.NewClient(t)
			name := redistest.UniqueName(t)
			proxy := redistest.NewProxy(t, srv.Addr())
			h := l.kind.new(proxy.NewClient(t), name, lease41, false)
			if _, err := failInnerUnlock(t, l, h, proxy); err != nil {
				t.Logf("Do's own Unlock: %v", err)
			}
			// Every caller has returned: the handle holds nothing, and
			// nothing may keep the name's keys past one lease.
			if !isClosed(h.Done()) {
				t.Error("Done is open after Do returned: the handle still counts a level nobody will unlock")
			}
			if gone, keys, hash := keysGoneWithin(t.Context(), admin, name, lease41+time.Second); !gone {
				t.Errorf("keys of the name still there a lease after every caller returned: %v, lock hash %v", keys, hash)
			}
			other := l.kind.new(srv.NewClient(t), name, lease41, false)
			if ok, err := other.write.TryLock(t.Context()); err != nil || !ok {
				t.Fatalf("another client's TryLock: %v %v, want the lock", ok, err)
			}
			if err := other.write.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Defect 2: after that failed inner Unlock, the handle's next plain Lock
// is a new hold and takes a new token; it was handed the previous hold's.
func TestFailedInnerUnlockNextTokenIsNew(t *testing.T) {
	for _, l := range netMutexLevels {
		t.Run(l.kind.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t)
			name := redistest.UniqueName(t)
			proxy := redistest.NewProxy(t, srv.Addr())
			h := l.kind.new(proxy.NewClient(t), name, lease41, true)
			first, _ := failInnerUnlock(t, l, h, proxy)
			ctx, cancel := context.WithTimeout(t.Context(), 3*lease41)
			defer cancel()
			if err := h.write.Lock(ctx); err != nil {
				t.Fatalf("the next plain Lock: %v", err)
			}
			defer h.write.Unlock(t.Context())
			if tok := h.Token(); tok <= first {
				t.Errorf("token of the next plain Lock %d, want above the previous hold's %d", tok, first)
			}
		})
	}
}

// downgrade41 is the downgrade of the defects of given-up holds: RLock
// with the rwlock's write hold's ctx, RUnlock to give it back.
var downgrade41 = netLevel{"rwlock-downgrade", netRWlock, false}

// reenterWhileGivenUp runs Do on the write side of h and, inside it,
// re-enters (or, for downgrade41, takes a read level) with
// context.WithoutCancel of Do's ctx while the watchdog gives the hold up:
// the renewals fail, every key of the name stands for stand (a server
// whose clock runs slow), and the call, sent after the first renewal
// failed, is held on its way out until Done has closed: its reply comes
// within the validity it was sent with, so no staleness rule of the
// engine gives it back, and the test takes the same path every run. It then reaches Redis, finds the hold still there, and
// whatever it took is given back with the same ctx. It returns the token
// of Do's hold.
func reenterWhileGivenUp(t *testing.T, l netLevel, h *netHandle, faults *clientFaults, stand time.Duration) uint64 {
	t.Helper()
	admin := redistest.SharedServer(t).NewClient(t)
	var token uint64
	_ = h.write.Do(t.Context(), func(ctx context.Context) error {
		token = h.Token()
		keep := context.WithoutCancel(ctx) // the loss does not cancel it
		lock, unlock := h.write.Lock, h.write.Unlock
		if l.name == downgrade41.name {
			lock, unlock = h.rw.RLock, h.rw.RUnlock
		}
		standFor(t.Context(), admin, h.name, stand)
		if !faults.holdRenewals(lease41) {
			t.Fatal("no renewal failed: the fault was not injected")
		}
		gate := faults.holdNextScript()
		res := make(chan error, 1)
		go func() { res <- lock(keep) }()
		gate.mustCatch(t, "the call sent nothing to hold")
		redistest.WaitFor(t, 3*lease41, func() bool { return isClosed(h.Done()) })
		faults.failPipes.Store(false)
		faults.let(gate)
		if err := <-res; err == nil {
			if err := unlock(keep); err != nil {
				t.Logf("giving back the level the call took: %v", err)
			}
		}
		return nil
	})
	return token
}

var givenUpLevels = []netLevel{netMutexLevels[0], netMutexLevels[1], netMutexLevels[2], downgrade41}

// Defect 3: a re-entry or downgrade in flight when the watchdog declared
// the hold lost brought the given-up hold back, its extra levels renewed
// for ever.
func TestGivenUpHoldStaysGivenUp(t *testing.T) {
	for _, l := range givenUpLevels {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t)
			admin := srv.NewClient(t)
			name := redistest.UniqueName(t)
			rdb := srv.NewClient(t)
			h := l.kind.new(rdb, name, lease41, false)
			const stand = 2 * lease41
			reenterWhileGivenUp(t, l, h, addClientFaults(rdb), stand)
			if !isClosed(h.Done()) {
				t.Error("Done is open again after the hold was given up and every caller returned")
			}
			if gone, keys, hash := keysGoneWithin(t.Context(), admin, name, stand+lease41+time.Second); !gone {
				t.Errorf("the given-up hold is still kept a lease after the slow clock let it go: %v, lock hash %v", keys, hash)
			}
		})
	}
}

// Defect 4: after such a revival, a fenced Lock returned nil with
// Token() == 0.
func TestLockAfterGivenUpHoldIsFenced(t *testing.T) {
	for _, l := range givenUpLevels {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t)
			name := redistest.UniqueName(t)
			rdb := srv.NewClient(t)
			h := l.kind.new(rdb, name, lease41, true)
			const stand = 2 * lease41
			first := reenterWhileGivenUp(t, l, h, addClientFaults(rdb), stand)
			ctx, cancel := context.WithTimeout(t.Context(), stand+3*lease41)
			defer cancel()
			if err := h.write.Lock(ctx); err != nil {
				t.Fatalf("the next plain Lock: %v", err)
			}
			defer h.write.Unlock(t.Context())
			if tok := h.Token(); tok == 0 || tok <= first {
				t.Errorf("a fenced Lock returned nil with token %d, want above the given-up hold's %d", tok, first)
			}
		})
	}
}

// Defect 5: a write Unlock that failed under a downgraded read kept the
// write level in Redis, renewed by the read's renewals, until the
// handle's next call: other readers stayed out while the reader read.
func TestFailedWriteUnlockUnderReadLetsReadersIn(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rw := rwlock.New(proxy.NewClient(t), name, rwlock.WithWatchdogTimeout(lease41))
	held := proxy.Hold(scriptOn(t, "rwlock_writeunlock.lua", name))
	if err := rw.Do(t.Context(), func(ctx context.Context) error { return rw.RLock(ctx) }); err == nil {
		t.Fatal("Do's Unlock succeeded though its release was held back")
	}
	select {
	case <-held.Caught():
	default:
		t.Fatal("the write release was not held back: the fault was not injected")
	}
	defer rw.RUnlock(t.Context())
	// The reader keeps reading and makes no call. The write level it
	// failed to release may stand for at most its lease.
	other := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease41))
	ctx, cancel := context.WithTimeout(t.Context(), 2*lease41+time.Second)
	defer cancel()
	if err := other.RLock(ctx); err != nil {
		t.Fatalf("another reader, while the downgraded reader reads: %v", err)
	}
	if err := other.RUnlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if isClosed(rw.Done()) {
		t.Error("the downgraded reader's Done closed, though its read hold stands")
	}
}
