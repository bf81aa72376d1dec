package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// late is what one row of the late-copy table gets: a client whose
// connection goes through the proxy, whose first copy of the row's script
// on the row's name the proxy keeps from Redis (the client gives up on it
// and the operation goes on without it), and a direct client.
type late struct {
	via, direct *redis.Client
	proxy       *redistest.Proxy
	name        string
}

// lateRow is one script's row: op runs an operation through via whose
// first copy of the script never reaches Redis in time, and which must
// succeed (or fail as it says) all the same; moveOn then moves the state
// on through direct, as other processes would, and returns what undoes
// it at the end. The late copy is delivered after that.
type lateRow struct {
	op     func(t *testing.T, l late)
	moveOn func(t *testing.T, l late) (cleanup func())
}

// lateCopyRows lists, per script file, a row of TestLateCopies. Every
// .lua file of the module must have one: TestEveryScriptLate fails
// otherwise, so a new script cannot be added without one.
var lateCopyRows = map[string]lateRow{
	"rlock_acquire.lua":        {lockLate(newRlock), holdMoveOn(newRlock)},
	"rlock_unlock.lua":         {unlockLate(newRlock), holdMoveOn(newRlock)},
	"rlock_renew.lua":          {renewLate(newRlock), holdMoveOn(newRlock)},
	"rlock_leave.lua":          leaveLate(newRlock),
	"rlock_forceunlock.lua":    {forceLate(func(rdb redis.UniversalClient, name string) forcer { return rlock.New(rdb, name) }), holdMoveOn(newRlock)},
	"fairlock_acquire.lua":     {lockLate(newFairlock), holdMoveOn(newFairlock)},
	"fairlock_unlock.lua":      {unlockLate(newFairlock), holdMoveOn(newFairlock)},
	"fairlock_renew.lua":       {renewLate(newFairlock), holdMoveOn(newFairlock)},
	"fairlock_leave.lua":       leaveLate(newFairlock),
	"fairlock_forceunlock.lua": {forceLate(func(rdb redis.UniversalClient, name string) forcer { return fairlock.New(rdb, name) }), holdMoveOn(newFairlock)},
	"rwlock_writelock.lua":     {lockLate(newWriter), holdMoveOn(newWriter)},
	"rwlock_writeunlock.lua":   {unlockLate(newWriter), holdMoveOn(newWriter)},
	"rwlock_readlock.lua":      {lockLate(newReader), holdMoveOn(newWriter)},
	"rwlock_readunlock.lua":    {unlockLate(newReader), holdMoveOn(newWriter)},
	"rwlock_renew.lua":         {renewLate(newWriter), holdMoveOn(newWriter)},
	"rwlock_withdraw.lua":      leaveLate(newWriter),
	"rwlock_forceunlock.lua":   {forceLate(func(rdb redis.UniversalClient, name string) forcer { return rwlock.New(rdb, name) }), holdMoveOn(newWriter)},
	"election_proclaim.lua":    {proclaimLate, leaderMoveOn},

	"semaphore_acquire.lua": {
		func(t *testing.T, l late) {
			setSem(t, l, 5)
			if ok, err := semaphore.New(l.via, l.name).TryAcquire(t.Context(), 2); ok || err == nil {
				t.Fatalf("TryAcquire whose script never arrived = %v, %v; want an error", ok, err)
			}
		},
		nothingMoves,
	},
	"semaphore_undo.lua": {
		func(t *testing.T, l late) {
			setSem(t, l, 5)
			l.proxy.DropReply(scriptOn(t, "semaphore_acquire.lua", l.name))
			ok, err := semaphore.New(l.via, l.name).TryAcquire(t.Context(), 2)
			if ok || err == nil {
				t.Fatalf("TryAcquire whose reply was lost = %v, %v; want an error", ok, err)
			}
		},
		func(t *testing.T, l late) func() {
			s := semaphore.New(l.direct, l.name)
			if ok, err := s.TryAcquire(t.Context(), 2); !ok || err != nil {
				t.Fatalf("TryAcquire after the undo = %v, %v", ok, err)
			}
			return func() { _ = s.Release(context.Background(), 2) }
		},
	},
	"semaphore_release.lua": {
		func(t *testing.T, l late) {
			setSem(t, l, 5)
			if err := semaphore.New(l.via, l.name).Release(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
		},
		nothingMoves,
	},
	"semaphore_setpermits.lua": {
		func(t *testing.T, l late) {
			if err := semaphore.New(l.via, l.name).SetPermits(t.Context(), 7); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, l late) func() {
			if err := semaphore.New(l.direct, l.name).SetPermits(t.Context(), 3); err != nil {
				t.Fatal(err)
			}
			return nil
		},
	},
	"semaphore_drain.lua": {
		func(t *testing.T, l late) {
			setSem(t, l, 4)
			if n, err := semaphore.New(l.via, l.name).Drain(t.Context()); n != 4 || err != nil {
				t.Fatalf("Drain = %d, %v; want 4", n, err)
			}
		},
		func(t *testing.T, l late) func() {
			if err := semaphore.New(l.direct, l.name).Release(t.Context(), 3); err != nil {
				t.Fatal(err)
			}
			return nil
		},
	},
	"leased_acquire.lua": {leasedRoundTrip(nil), nothingMoves},
	"leased_release.lua": {leasedRoundTrip(nil), leasedMoveOn},
	"leased_renew.lua": {leasedRoundTrip(func(t *testing.T, s *semaphore.Leased, id string) {
		_, _ = s.Renew(t.Context(), id, time.Minute) // a renewal may be resent
	}), leasedMoveOn},
	"leased_addpermits.lua": {
		func(t *testing.T, l late) {
			setLeased(t, l, 2)
			if err := semaphore.NewLeased(l.via, l.name).AddPermits(t.Context(), 3); err != nil {
				t.Fatal(err)
			}
		},
		nothingMoves,
	},
	"leased_setpermits.lua": {
		func(t *testing.T, l late) { setLeasedVia(t, l.via, l.name, 4) },
		func(t *testing.T, l late) func() { setLeased(t, l, 1); return nil },
	},
	"leased_available.lua": {
		func(t *testing.T, l late) {
			setLeased(t, l, 2)
			_, _ = semaphore.NewLeased(l.via, l.name).Available(t.Context()) // may be resent
		},
		leasedMoveOn,
	},
	"latch_countdown.lua": {
		func(t *testing.T, l late) {
			latchAt(t, l, 3)
			if err := latch.New(l.via, l.name).CountDown(t.Context()); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, l late) func() {
			if err := latch.New(l.direct, l.name).CountDown(t.Context()); err != nil {
				t.Fatal(err)
			}
			return nil
		},
	},
	"latch_trysetcount.lua": {
		func(t *testing.T, l late) {
			if ok, err := latch.New(l.via, l.name).TrySetCount(t.Context(), 1); !ok || err != nil {
				t.Fatalf("TrySetCount = %v, %v", ok, err)
			}
		},
		func(t *testing.T, l late) func() {
			if err := latch.New(l.direct, l.name).CountDown(t.Context()); err != nil {
				t.Fatal(err)
			}
			return nil // at zero: no key left
		},
	},
	"latch_delete.lua": {
		func(t *testing.T, l late) {
			latchAt(t, l, 3)
			if ok, err := latch.New(l.via, l.name).Delete(t.Context()); !ok || err != nil {
				t.Fatalf("Delete = %v, %v", ok, err)
			}
		},
		func(t *testing.T, l late) func() {
			latchAt(t, l, 2)
			return func() { _, _ = latch.New(l.direct, l.name).Delete(context.Background()) }
		},
	},
}

func TestEveryScriptLate(t *testing.T) {
	files, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := lateCopyRows[f]; !ok {
			t.Errorf("script without a late-copy row: %s", f)
		}
	}
}

// TestLateCopies: for every script, the first copy of one of its runs is
// kept from Redis while the operation goes on without it (the client gave
// up on it, resent it or undid it, and reported the outcome); then the
// state moves on, the copy's receipt, if any, is gone and its deadline,
// if any, has passed, as for a copy that TCP retransmitted for minutes;
// then Redis runs the copy. It must change nothing: no hold, count, line
// or announcement that moved on.
func TestLateCopies(t *testing.T) {
	direct, proxy, _ := redistest.ProxiedServer(t)
	// A copy held back is given up after a read timeout well inside the
	// request's window (exactly.RequestWindow), not after the whole ctx,
	// so that the call can resend it.
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = time.Second })
	files := slices.Sorted(maps.Keys(lateCopyRows))
	for _, f := range files {
		row := lateCopyRows[f]
		t.Run(strings.TrimSuffix(f, ".lua"), func(t *testing.T) {
			t.Parallel()
			name := redistest.UniqueName(t)
			l := late{via: via, direct: direct, proxy: proxy, name: name}
			held := proxy.Hold(scriptOn(t, f, name))
			sent := time.Now()
			row.op(t, l)
			select {
			case <-held.Caught(): // a leave may still be on its way (perclient.TidyUp)
			case <-time.After(10 * time.Second):
				t.Fatal("no copy of the script was held: the fault was not injected")
			}
			if cleanup := row.moveOn(t, l); cleanup != nil {
				defer cleanup()
			}
			// Past every deadline a copy sent then can carry, and past
			// its receipt's lifetime: the receipts are deleted, as they
			// would have expired by then.
			waitServerPast(t, direct, sent.Add(exactly.RequestWindow+time.Second))
			dropReceipts(t, direct, name)
			before := snapshot(t, direct, name)
			reply, err := held.Deliver(t.Context())
			if err != nil {
				t.Fatalf("delivering the late copy: %v", err)
			}
			if after := snapshot(t, direct, name); !maps.Equal(before, after) {
				t.Fatalf("a late copy (reply %q) changed the state that moved on:\nbefore %v\nafter  %v", reply, before, after)
			}
		})
	}
}

// holdMoveOn: another handle of the lock takes it through direct.
func holdMoveOn(h newHandle) func(t *testing.T, l late) func() {
	return func(t *testing.T, l late) func() {
		b := h(l.direct, l.name)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := b.lock(ctx); err != nil {
			t.Fatalf("another handle's Lock after the operation: %v", err)
		}
		return func() {
			if err := b.unlock(context.Background()); err != nil {
				t.Errorf("the later holder lost its hold: %v", err)
			}
		}
	}
}

// lockLate: a Lock whose first attempt never arrives takes the lock all
// the same, and releases it.
func lockLate(h newHandle) func(t *testing.T, l late) {
	return func(t *testing.T, l late) {
		a := h(l.via, l.name)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := a.lock(ctx); err != nil {
			t.Fatalf("Lock whose first attempt never arrived: %v", err)
		}
		if err := a.unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// unlockLate: an Unlock whose first copy never arrives releases the lock.
func unlockLate(h newHandle) func(t *testing.T, l late) {
	return func(t *testing.T, l late) {
		a := h(l.via, l.name)
		ctx := t.Context()
		if err := a.lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.unlock(ctx); err != nil {
			t.Fatalf("Unlock whose first copy never arrived: %v", err)
		}
		if n := a.levels(ctx, l.direct); n != 0 {
			t.Fatalf("%d levels left after the Unlock", n)
		}
	}
}

// renewLate: a hold whose renewal never arrives is lost (or released).
func renewLate(h newHandle) func(t *testing.T, l late) {
	return func(t *testing.T, l late) {
		a := h(l.via, l.name, 900*time.Millisecond)
		ctx := t.Context()
		if err := a.lock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.done():
		case <-time.After(10 * time.Second):
			t.Fatal("the hold outlived a renewal that never arrived")
		}
		_ = a.unlock(ctx) // ErrNotHeld: the hold was lost
	}
}

// leaveLate: a waiter that gives up leaves the line (or withdraws its
// announcement) though the first copy of its leave never arrives; then
// the same handle waits again behind another holder, and must keep its
// new place when the late copy of its first leave runs.
func leaveLate(h newHandle) lateRow {
	waiters := make(map[string]handle) // by name: the rows run in parallel
	var mu sync.Mutex
	return lateRow{
		op: func(t *testing.T, l late) {
			holder, waiter := h(l.direct, l.name), h(l.via, l.name)
			mu.Lock()
			waiters[l.name] = waiter
			mu.Unlock()
			ctx := t.Context()
			if err := holder.lock(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := holder.unlock(ctx); err != nil {
					t.Error(err)
				}
			}()
			wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if err := waiter.lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiter's Lock = %v, want a deadline error", err)
			}
		},
		moveOn: func(t *testing.T, l late) func() {
			mu.Lock()
			waiter := waiters[l.name]
			mu.Unlock()
			holder := h(l.direct, l.name)
			ctx := t.Context()
			if err := holder.lock(ctx); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { got <- waiter.lock(context.Background()) }()
			n := keyspace.NewNames(l.name)
			redistest.WaitFor(t, 10*time.Second, func() bool {
				return l.direct.LLen(ctx, n.Queue()).Val()+l.direct.ZCard(ctx, n.Writers()).Val() == 1
			})
			return func() {
				if err := holder.unlock(context.Background()); err != nil {
					t.Error(err)
				}
				if err := <-got; err != nil {
					t.Errorf("the waiter behind the late copy: %v", err)
					return
				}
				if err := waiter.unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
		},
	}
}

// forceLate: a ForceUnlock whose first copy never arrives deletes the lock
// all the same, and reports it.
func forceLate(h func(rdb redis.UniversalClient, name string) forcer) func(t *testing.T, l late) {
	return func(t *testing.T, l late) {
		ctx := t.Context()
		holder := h(l.direct, l.name)
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		deleted, err := h(l.via, l.name).ForceUnlock(ctx)
		if err != nil || !deleted {
			t.Fatalf("ForceUnlock whose first copy never arrived = %v, %v; want true, nil", deleted, err)
		}
		if err := holder.Unlock(ctx); !errors.Is(err, errs.ErrNotHeld) {
			t.Fatalf("the force-unlocked holder's Unlock = %v, want ErrNotHeld", err)
		}
	}
}

func nothingMoves(*testing.T, late) func() { return nil }

// leasedRoundTrip: a permit acquired through via (and, with between, used
// so) is released.
func leasedRoundTrip(between func(t *testing.T, s *semaphore.Leased, id string)) func(t *testing.T, l late) {
	return func(t *testing.T, l late) {
		setLeased(t, l, 2)
		s := semaphore.NewLeased(l.via, l.name)
		id, err := s.Acquire(t.Context(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if between != nil {
			between(t, s, id)
		}
		if err := s.Release(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
}

// leasedMoveOn: another handle takes a permit.
func leasedMoveOn(t *testing.T, l late) func() {
	s := semaphore.NewLeased(l.direct, l.name)
	id, err := s.Acquire(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := s.Release(context.Background(), id); err != nil {
			t.Errorf("the later permit was lost: %v", err)
		}
	}
}

func setSem(t *testing.T, l late, n int64) {
	t.Helper()
	if err := semaphore.New(l.direct, l.name).SetPermits(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func setLeased(t *testing.T, l late, n int64) { t.Helper(); setLeasedVia(t, l.direct, l.name, n) }

func setLeasedVia(t *testing.T, rdb *redis.Client, name string, n int64) {
	t.Helper()
	if err := semaphore.NewLeased(rdb, name).SetPermits(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func latchAt(t *testing.T, l late, n int64) {
	t.Helper()
	if ok, err := latch.New(l.direct, l.name).TrySetCount(t.Context(), n); !ok || err != nil {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
}

// waitServerPast waits until the server's clock is past at.
func waitServerPast(t *testing.T, rdb *redis.Client, at time.Time) {
	t.Helper()
	redistest.WaitFor(t, time.Minute, func() bool {
		now, err := rdb.Time(t.Context()).Result()
		return err == nil && now.After(at)
	})
}

// dropReceipts deletes every receipt of the name, as their expiry would.
func dropReceipts(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	n := keyspace.NewNames(name)
	kinds := append(append([]string{keyspace.ReceiptForce}, keyspace.ReceiptKinds...), keyspace.LatchReceiptKinds...)
	for _, kind := range kinds {
		keys := rdb.Keys(t.Context(), n.ReceiptPrefix(kind)+"*").Val()
		if len(keys) > 0 {
			rdb.Del(t.Context(), keys...)
		}
	}
}

// snapshot returns what the keys of the name hold, without what changes
// with time alone (expiries, the lapse times of announcements).
func snapshot(t *testing.T, rdb *redis.Client, name string) map[string]string {
	t.Helper()
	ctx := t.Context()
	m := make(map[string]string)
	for _, k := range rdb.Keys(ctx, "*{"+name+"}*").Val() {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			m[k] = rdb.Get(ctx, k).Val()
			if strings.Contains(k, ":place:") {
				m[k] = "a place" // its mark moves with its owner's own attempts
			}
		case "hash":
			m[k] = fmt.Sprint(rdb.HGetAll(ctx, k).Val())
		case "list":
			m[k] = fmt.Sprint(rdb.LRange(ctx, k, 0, -1).Val())
		case "zset":
			m[k] = fmt.Sprint(rdb.ZRange(ctx, k, 0, -1).Val())
		default:
			m[k] = typ
		}
	}
	return m
}
