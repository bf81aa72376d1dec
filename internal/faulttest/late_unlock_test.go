package faulttest_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/redistest"
)

// TestLateUnlockSameHandle is the case TestLateCopies misses, where the
// state moves on through another handle: there the late copy of a
// release finds another owner's hold and changes nothing whatever it
// names. Here it moves on through the same handle, whose owner id (and,
// often, expected level) the next hold shares, as the analysis harness
// found under late delivery: the first copy of an Unlock is held back,
// the client resends it and goes on, the same handle takes the lock
// again, then Redis runs the late copy. Before releases
// named the handle's latest attempt, that copy released the later hold:
// another handle took the lock while the first still believed it held.
// Now it finds the later attempt's mark and must change nothing.
func TestLateUnlockSameHandle(t *testing.T) {
	type row struct {
		name, script string
		h            newHandle
	}
	rows := []row{
		{"rlock", "rlock_unlock.lua", newRlock},
		{"fairlock", "fairlock_unlock.lua", newFairlock},
		{"rwlock write", "rwlock_writeunlock.lua", newWriter},
		{"rwlock read", "rwlock_readunlock.lua", newReader},
		{"election", "fairlock_unlock.lua", newCandidate}, // Resign
	}
	direct, proxy, _ := redistest.ProxiedServer(t)
	// A copy held back is given up after a read timeout, so that the
	// Unlock resends it well inside its ctx.
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = time.Second })

	// late holds back the first copy of the row's script that unlock
	// sends, lets unlock go on without it (its resend goes through), runs
	// again (a later hold or level of the same handle), then delivers the
	// copy and checks that it changed nothing.
	late := func(t *testing.T, r row, name string, unlock, again func() error) {
		t.Helper()
		held := proxy.Hold(scriptOn(t, r.script, name))
		if err := unlock(); err != nil {
			t.Fatalf("Unlock whose first copy is held back: %v", err)
		}
		select {
		case <-held.Caught():
		case <-time.After(10 * time.Second):
			t.Fatal("no copy of the script was held: the fault was not injected")
		}
		if err := again(); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, direct, name)
		reply, err := held.Deliver(t.Context())
		if err != nil {
			t.Fatalf("delivering the late copy: %v", err)
		}
		if after := snapshot(t, direct, name); !maps.Equal(before, after) {
			t.Fatalf("the late copy of an earlier Unlock (reply %q) changed the same handle's later hold:\nbefore %v\nafter  %v", reply, before, after)
		}
	}

	for _, r := range rows {
		// The handle's next hold: the late copy expects the level it
		// has again, 1, under the same owner id.
		t.Run(r.name+"/next hold", func(t *testing.T) {
			name := redistest.UniqueName(t)
			ctx := t.Context()
			a := r.h(via, name)
			if err := a.lock(ctx); err != nil {
				t.Fatal(err)
			}
			late(t, r, name, func() error { return a.unlock(ctx) }, func() error { return a.lock(ctx) })
			select {
			case <-a.done():
				t.Fatal("the handle's Done closed: its later hold was released")
			default:
			}
			if n := a.levels(ctx, direct); n != 1 {
				t.Fatalf("%d levels in Redis after the late copy; want the later hold's 1", n)
			}
			if err := a.unlock(ctx); err != nil {
				t.Fatalf("Unlock of the later hold: %v", err)
			}
		})
	}
	// A level taken again through Do's ctx is not a case: re-entry is
	// counted in the process, and the Unlock of an inner level sends no
	// script that could run late.
}

// newCandidate is an election candidate as a handle: Campaign takes the
// leadership, Resign gives it up through fairlock_unlock.lua.
func newCandidate(rdb redis.UniversalClient, name string, _ ...time.Duration) handle {
	e := election.New(rdb, name)
	return handle{
		lock:   func(ctx context.Context) error { return e.Campaign(ctx, "a") },
		unlock: e.Resign,
		done:   e.Done,
		levels: hashLevels(name),
	}
}
