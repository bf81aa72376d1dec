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

// TestRetriedScriptsChangeNothing: an acquisition or a release run a
// second time, as after a lost reply, changes no level: a hold has one
// read level and one write level, named by its id, and a read release
// names the levels it expects too.
func TestRetriedScriptsChangeNothing(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) { testRetriedScripts(t, miniEnv(t)) })
	onBoth(t, testRetriedScripts)
}

func testRetriedScripts(t *testing.T, e env) {
	ctx := t.Context()
	rdb, name := e.client(t), redistest.UniqueName(t)
	keys := rwKeys(name)
	for range 2 { // the second run is a retry of the first
		res, err := script.RWReadTake(ctx, rdb, keys, script.RWReadArgs{ID: "o:1", Lease: time.Minute, Patience: time.Second, Deadline: redistest.InTime(), Tag: 1}).Result()
		if err != nil || !res.OK || res.Reads != 1 {
			t.Fatalf("RWReadTake = %+v, %v; want the hold's one read level", res, err)
		}
	}
	if v := rdb.HGet(ctx, keys.Lock, "r:o:1").Val(); v != "1" {
		t.Fatalf("read level's tag = %q after a retried acquisition, want 1", v)
	}
	if res, err := script.RWReadUnlock(ctx, rdb, keys, script.ReleaseArgs{ID: "o:1", Lease: time.Minute, Sharded: e.sharded, Tag: 1}).Result(); err != nil || !res.OK {
		t.Fatalf("RWReadUnlock = %+v, %v", res, err)
	}
	if res, err := script.RWReadUnlock(ctx, rdb, keys, script.ReleaseArgs{ID: "o:1", Lease: time.Minute, Sharded: e.sharded, Tag: 1}).Result(); err != nil || !res.NotHeld {
		t.Fatalf("retried RWReadUnlock = %+v, %v; want not held", res, err)
	}
	for range 2 {
		res, err := script.RWWriteTake(ctx, rdb, keys, script.RWWriteArgs{ID: "o:2", Lease: time.Minute, Patience: time.Second, Deadline: redistest.InTime()}).Result()
		if err != nil || !res.OK || res.Writes != 1 {
			t.Fatalf("RWWriteTake = %+v, %v; want the write level", res, err)
		}
	}
	if res, err := script.RWWriteUnlock(ctx, rdb, keys, script.ReleaseArgs{ID: "o:2", Sharded: e.sharded}).Result(); err != nil || !res.OK {
		t.Fatalf("RWWriteUnlock = %+v, %v", res, err)
	}
	if res, err := script.RWWriteUnlock(ctx, rdb, keys, script.ReleaseArgs{ID: "o:2", Sharded: e.sharded}).Result(); err != nil || !res.NotHeld {
		t.Fatalf("retried RWWriteUnlock = %+v, %v; want not held", res, err)
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

// TestRetriedAcquireRearmsLease: a write acquisition run again by its
// hold id, as after a lost reply, takes nothing more but re-arms the
// leases (the write level's, and its downgrade's read lease), since the
// caller counts the hold's validity from the retry; so does a read run
// again.
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
			keys := rwKeys(name)
			read := func(want int64) {
				t.Helper()
				res, err := script.RWReadTake(ctx, rdb, keys, script.RWReadArgs{ID: "o:1", Lease: lease, Patience: time.Second, Deadline: redistest.InTime()}).Result()
				if err != nil || !res.OK || res.Reads != want {
					t.Fatalf("read = %+v, %v; want %d read levels", res, err, want)
				}
			}
			write := func(reads int64) {
				t.Helper()
				res, err := script.RWWriteTake(ctx, rdb, keys, script.RWWriteArgs{ID: "o:1", Lease: lease, Patience: time.Second, Deadline: redistest.InTime()}).Result()
				if err != nil || !res.OK || res.Writes != 1 || res.Reads != reads {
					t.Fatalf("write = %+v, %v; want the write level and %d read levels", res, err, reads)
				}
			}
			if mode == "write" {
				write(0)
			}
			read(1) // for the writer, a downgrade: its read lease is re-armed too
			for _, k := range []string{keys.Lock, keys.ReaderKey("o:1")} {
				rdb.PExpire(ctx, k, time.Second) // the lost run was long ago
			}
			if mode == "write" {
				write(1)
			} else {
				read(1)
			}
			for _, k := range []string{keys.Lock, keys.ReaderKey("o:1")} {
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
