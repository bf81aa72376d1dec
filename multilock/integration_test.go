package multilock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// Integration tier: real redis-server processes started by the tests.

// crossedRun runs, from each client, workers that take the group (x, y)
// or (y, x) in turn, iters times each, and do an unprotected
// read-modify-write of a counter on counterRDB inside it: a deadlock
// fails the run at its deadline, a lapse of mutual exclusion loses an
// increment.
func crossedRun(t *testing.T, clients []redis.UniversalClient, counterRDB redis.UniversalClient, x, y string, iters int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	counter := "counter:" + x
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(clients))
	for i, rdb := range clients {
		first, second := x, y
		if i%2 == 1 {
			first, second = y, x
		}
		wg.Go(func() {
			g := multilock.New(rlock.New(rdb, first), rlock.New(rdb, second))
			for range iters {
				if err := incrementUnder(ctx, g, counterRDB, counter); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := counterRDB.Get(t.Context(), counter).Int()
	if err != nil || n != len(clients)*iters {
		t.Fatalf("counter = %d, %v; want %d", n, err, len(clients)*iters)
	}
}

// incrementUnder locks l, reads counter, writes it back plus one, and
// unlocks.
func incrementUnder(ctx context.Context, l interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}, rdb redis.UniversalClient, counter string) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	n, err := rdb.Get(ctx, counter).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if err := rdb.Set(ctx, counter, n+1, 0).Err(); err != nil {
		return err
	}
	return l.Unlock(ctx)
}

func TestCrossedGroupsNeverDeadlock(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	var clients []redis.UniversalClient
	for range 4 {
		clients = append(clients, srv.NewClient(t))
	}
	crossedRun(t, clients, clients[0], name+":x", name+":y", 50)
	assertNoKeys(t, clients[0], name)
}

// assertNoKeys fails if any key whose name contains name is left.
func assertNoKeys(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	perclient.AwaitTidied(t.Context())
	keys, err := rdb.Keys(t.Context(), "*"+name+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, k := range keys {
		if k != "counter:"+name+":x" {
			left = append(left, k)
		}
	}
	if len(left) > 0 {
		t.Fatalf("keys left in Redis: %v", left)
	}
}

func TestTryLockAndCancelLeaveNothing(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	rdb, otherRDB := srv.NewClient(t), srv.NewClient(t)
	other := rlock.New(otherRDB, name+":b")
	mustLock(t, other)
	g := multilock.New(rlock.New(rdb, name+":a"), rlock.New(rdb, name+":b"), rlock.New(rdb, name+":c"))
	if ok, err := g.TryLock(t.Context()); ok || err != nil {
		t.Fatalf("TryLock with a member taken = %v, %v; want false, nil", ok, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := g.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a member taken = %v, want the deadline", err)
	}
	mustUnlock(t, other)
	assertNoKeys(t, rdb, name)
}

func TestClusterMembersInDifferentSlots(t *testing.T) {
	c := redistest.SharedCluster(t)
	names := c.NamesOnEveryMaster(t, func(n string) string { return keyspace.NewNames(n).Lock() })
	var clients []redis.UniversalClient
	for range 2 {
		clients = append(clients, c.NewClient(t))
	}
	crossedRun(t, clients, clients[0], names[0], names[1], 20)

	other := rlock.New(clients[1], names[2])
	mustLock(t, other)
	g := multilock.New(rlock.New(clients[0], names[0]), rlock.New(clients[0], names[1]), rlock.New(clients[0], names[2]))
	if ok, err := g.TryLock(t.Context()); ok || err != nil {
		t.Fatalf("TryLock with a member taken = %v, %v; want false, nil", ok, err)
	}
	got := make(chan error, 1)
	go func() { got <- g.Lock(t.Context()) }()
	mustUnlock(t, other)
	served(t, got, g)
	for _, n := range names {
		if ok, err := rlock.New(clients[0], n).IsLocked(t.Context()); ok || err != nil {
			t.Fatalf("%s still locked (%v)", n, err)
		}
	}
}
