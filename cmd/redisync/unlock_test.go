package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

func TestUnlockForceWakesWaiter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		// A minute's lease: without the wake-up, the waiter would wait that long.
		holder := rlock.New(b.client(), name, rlock.WithLeaseTime(time.Minute))
		if err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		waiter := rlock.New(b.client(), name)
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		n := keyspace.NewNames(name)
		redistest.WaitFor(t, 5*time.Second, func() bool { // in line, its own channel subscribed
			q := b.rdb.LRange(ctx, n.Queue(), 0, -1).Val()
			return len(q) == 1 && b.numSub(n.WaiterChannel(q[0])) == 1
		})

		_, stderr := mustRun(t, exitUsage, b.args("unlock", name)...)
		if !strings.Contains(stderr, "--force") {
			t.Errorf("refusal does not mention --force:\n%s", stderr)
		}
		if held, err := holder.IsHeld(ctx); !held || err != nil {
			t.Fatalf("unlock without --force released the lock (held %v, %v)", held, err)
		}

		start := time.Now()
		stdout, _ := mustRun(t, exitOK, b.args("unlock", "--force", name)...)
		if !strings.Contains(stdout, "unlocked") || !strings.Contains(stdout, "held 1") || !strings.Contains(stdout, fmt.Sprintf("pid %d on ", os.Getpid())) {
			t.Errorf("unlock output does not say what it deleted:\n%s", stdout)
		}
		awaitLock(t, got, "waiting Lock after unlock --force")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("waiter acquired %v after unlock --force, want at once", d)
		}
		if err := waiter.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := holder.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
			t.Fatalf("old holder's Unlock = %v, want ErrNotHeld", err)
		}
	})
}

func TestUnlockRefusals(t *testing.T) {
	addr, rdb := miniBackend(t)
	ctx := t.Context()
	rdb.Set(ctx, keyspace.NewNames("db-slots").Lock(), 7, 0)
	workers := semaphore.NewLeased(rdb, "workers")
	if err := workers.SetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	id, err := workers.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, keyspace.NewNames("odd").Lock(), "hello", 0)
	held := rlock.New(rdb, "orders")
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)

	stdout, stderr := mustRun(t, exitFailure, "unlock", "--force", "--redis", "redis://"+addr, "db-slots", "odd", "nothing", "orders", "workers")
	for _, want := range []string{
		`"db-slots": a counting semaphore, not a lock: its permits are not owned`, `'redisync semaphore set --force "db-slots" N'`,
		`"workers": a leased semaphore, not a lock: give a permit back by its id with 'redisync semaphore release --force "workers" ID' (acquired: "` + id + `"`,
		`"odd": keys of a layout redisync does not know`, `"nothing": not locked`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, `"orders": unlocked`) {
		t.Errorf("the lock among the refusals was not unlocked:\n%s", stdout)
	}
	if v := rdb.Get(ctx, keyspace.NewNames("db-slots").Lock()).Val(); v != "7" {
		t.Errorf("semaphore changed to %q", v)
	}
	if v := rdb.Get(ctx, keyspace.NewNames("odd").Lock()).Val(); v != "hello" {
		t.Errorf("unknown key changed to %q", v)
	}
}
