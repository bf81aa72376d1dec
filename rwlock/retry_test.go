package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/rwlock"
)

// Unit tier, continued: replies lost in flight, on miniredis.

// TestRetriedScriptsChangeNothing: an acquire or release script run a
// second time with the same expected hold count, as after a lost reply,
// changes no hold count.
func TestRetriedScriptsChangeNothing(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) { testRetriedScripts(t, miniEnv(t)) })
	onBoth(t, testRetriedScripts)
}

func testRetriedScripts(t *testing.T, e env) {
	ctx := t.Context()
	rdb, name := e.client(t), redistest.UniqueName(t)
	keys := rwKeys(name, "o")
	for range 2 { // the second run is a retry of the first
		res, err := script.RWReadTake(ctx, rdb, keys, script.RWReadArgs{Owner: "o", Lease: time.Minute, Reads: 0, Announce: false, Patience: time.Second, Mark: 1, Deadline: redistest.InTime(), Writes: -1}).Result()
		if err != nil || !res.OK || res.Reads != 1 {
			t.Fatalf("RWLockRLock = %+v, %v; want 1 read hold", res, err)
		}
	}
	res, err := script.RWReadUnlock(ctx, rdb, keys, script.ReleaseArgs{Owner: "o", Lease: time.Minute, Sharded: e.sharded, Expect: 2, Mark: 0}).Result()
	if err != nil || !res.Mismatch {
		t.Fatalf("RWLockRUnlock expecting 2 holds = %+v, %v; want a mismatch", res, err)
	}
	if v := rdb.HGet(ctx, keys.Lock, "r:o").Val(); v != "1" {
		t.Fatalf("read holds = %q after a mismatched unlock, want 1", v)
	}
	if res, err := script.RWReadUnlock(ctx, rdb, keys, script.ReleaseArgs{Owner: "o", Lease: time.Minute, Sharded: e.sharded, Expect: 1, Mark: 0}).Result(); err != nil || !res.OK {
		t.Fatalf("RWLockRUnlock = %+v, %v", res, err)
	}
	for range 2 {
		res, err := script.RWWriteTake(ctx, rdb, keys, script.RWWriteArgs{Owner: "o", Lease: time.Minute, Fencing: false, Writes: 0, Announce: false, Patience: time.Second, Mark: 1, Deadline: redistest.InTime(), Reads: -1}).Result()
		if err != nil || !res.OK || res.Writes != 1 {
			t.Fatalf("RWLockLock = %+v, %v; want 1 write hold", res, err)
		}
	}
	res, err = script.RWWriteUnlock(ctx, rdb, keys, script.ReleaseArgs{Owner: "o", Lease: time.Minute, Sharded: e.sharded, Expect: 2, Mark: 0}).Result()
	if err != nil || !res.Mismatch {
		t.Fatalf("RWLockUnlock expecting 2 holds = %+v, %v; want a mismatch", res, err)
	}
	if res, err := script.RWWriteUnlock(ctx, rdb, keys, script.ReleaseArgs{Owner: "o", Lease: time.Minute, Sharded: e.sharded, Expect: 1, Mark: 0}).Result(); err != nil || !res.OK {
		t.Fatalf("RWLockUnlock = %+v, %v", res, err)
	}
	e.assertNoKeys(t, name)
}

func TestCancelledMidScriptGivesBackMini(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(*rwlock.RWMutex, context.Context) error
	}{
		{"RLock", (*rwlock.RWMutex).RLock},
		{"Lock", (*rwlock.RWMutex).Lock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rdb := redistest.Mini(t)
			faults := redistest.AddScriptFaults(rdb)
			rw := rwlock.New(rdb, "mid")
			mustRLock(t, rw) // loads the scripts: the armed call is one EVALSHA
			mustRUnlock(t, rw)
			mustLock(t, rw)
			mustUnlock(t, rw)
			ctx, cancel := context.WithCancel(t.Context())
			faults.LoseReplies(1, redistest.LoseAs(context.Canceled), redistest.LoseCancelling(cancel))
			if err := tc.lock(rw, ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s = %v, want context.Canceled", tc.name, err)
			}
			assertNoKeysMini(t, rdb, "mid")
			select {
			case <-rw.Done():
			default:
				t.Fatal("Done open after a failed acquisition")
			}
		})
	}
}

func TestIsLockedAndTTLMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rw := rwlock.New(rdb, "state", rwlock.WithLeaseTime(time.Minute))
	if rw.Name() != "state" {
		t.Fatalf("Name = %q", rw.Name())
	}
	for _, step := range []struct {
		do     func(testing.TB, *rwlock.RWMutex)
		locked bool
	}{{mustRLock, true}, {mustRUnlock, false}, {mustLock, true}, {mustUnlock, false}} {
		step.do(t, rw)
		locked, err := rw.IsLocked(ctx)
		ttl, err2 := rw.TTL(ctx)
		if locked != step.locked || err != nil || err2 != nil {
			t.Fatalf("IsLocked = %v, %v; TTL error %v; want %v", locked, err, err2, step.locked)
		}
		if step.locked != (ttl > 59*time.Second) || (!step.locked && ttl != 0) {
			t.Fatalf("TTL = %v while locked = %v", ttl, step.locked)
		}
	}
}

// TestRetriedAcquireRearmsLease: a retried acquire (the first reply lost)
// adds no hold but re-arms the leases, since the caller counts the hold's
// validity from the retry.
func TestRetriedAcquireRearmsLease(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) { testRetriedAcquireRearms(t, miniEnv(t)) })
	onBoth(t, testRetriedAcquireRearms)
}

func testRetriedAcquireRearms(t *testing.T, e env) {
	const lease = 10 * time.Second
	ctx := t.Context()
	for _, mode := range []string{"read", "write"} {
		t.Run(mode, func(t *testing.T) {
			rdb, name := e.client(t), redistest.UniqueName(t)
			keys := rwKeys(name, "o")
			acquire := func() {
				t.Helper()
				var cmd script.RWHoldsCmd // the wrappers run the script at once
				if mode == "write" {
					cmd = script.RWWriteTake(ctx, rdb, keys, script.RWWriteArgs{Owner: "o", Lease: lease, Fencing: false, Writes: 0, Announce: false, Patience: time.Second, Mark: 1, Deadline: redistest.InTime(), Reads: -1})
				} else {
					cmd = script.RWReadTake(ctx, rdb, keys, script.RWReadArgs{Owner: "o", Lease: lease, Reads: 0, Announce: false, Patience: time.Second, Mark: 1, Deadline: redistest.InTime(), Writes: -1})
				}
				res, err := cmd.Result()
				if err != nil || !res.OK || (mode == "read" && res.Reads != 1) || (mode == "write" && res.Writes != 1) {
					t.Fatalf("acquire = %+v, %v; want one hold", res, err)
				}
			}
			acquire()
			if mode == "write" { // the writer's read lease is re-armed too
				if res, err := script.RWReadTake(ctx, rdb, keys, script.RWReadArgs{Owner: "o", Lease: lease, Reads: 0, Announce: false, Patience: time.Second, Mark: 1, Deadline: redistest.InTime(), Writes: -1}).Result(); err != nil || res.Reads != 1 {
					t.Fatalf("write holder's RLock = %+v, %v", res, err)
				}
			}
			for _, k := range []string{keys.Lock, keys.Reader} {
				rdb.PExpire(ctx, k, time.Second) // the lost run was long ago
			}
			acquire()
			for _, k := range []string{keys.Lock, keys.Reader} {
				if d := rdb.PTTL(ctx, k).Val(); d < lease-time.Second {
					t.Fatalf("%s expires in %v after the retried acquire, want re-armed to %v", k, d, lease)
				}
			}
			if _, err := rwlock.New(rdb, name).ForceUnlock(ctx); err != nil {
				t.Fatal(err)
			}
			e.assertNoKeys(t, name)
		})
	}
}
