package rlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Waiters parked for longer than WaiterTimeout keep their places and the
// line itself (their client refreshes both), so the release grants the
// lock to them in turn rather than finding an empty line.
func TestParkedLineOutlivesWaiterTimeout(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	n := keyspace.NewNames(name)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	held := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for range 3 {
		w := rlock.New(srv.NewClient(t), name)
		wg.Go(func() {
			if err := w.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			held <- struct{}{}
			if err := w.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return admin.LLen(ctx, n.Queue()).Val() == 3 })
	time.Sleep(rlock.WaiterTimeout + time.Second) // what is under test: outliving the timeout
	if q := admin.LLen(ctx, n.Queue()).Val(); q != 3 {
		t.Fatalf("line after %v: %d waiters, want 3", rlock.WaiterTimeout+time.Second, q)
	}
	mustUnlock(t, holder)
	for i := range 3 {
		select {
		case <-held:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 3 waiters held the lock", i)
		}
	}
	wg.Wait()
	if n := admin.Exists(ctx, n.Lock(), n.Queue()).Val(); n != 0 {
		t.Fatal("keys left behind")
	}
}

// A waiter whose pub/sub connection cannot be opened (new connections
// refused, its pooled command connections fine) still hears its client's
// keeper between subscription tries: a grant to it is found, not left to
// lapse with the lock then free.
func TestWaiterWithoutSubscriptionFindsGrant(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	n := keyspace.NewNames(name)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	p := redistest.NewProxy(t, srv.Addr())
	wrdb := p.NewClient(t)
	var wg sync.WaitGroup
	for range 6 { // open pooled connections: commands keep working
		wg.Go(func() { wrdb.Do(ctx, "DEBUG", "SLEEP", "0.05") })
	}
	wg.Wait()
	p.Refuse(true)
	w := rlock.New(wrdb, name)
	got := make(chan error, 1)
	go func() { got <- w.Lock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return admin.LLen(ctx, n.Queue()).Val() == 1 })
	released := time.Now()
	mustUnlock(t, holder)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("waiter held %v after the release", time.Since(released))
	case <-time.After(hold.GrantLease + 2*time.Second):
		t.Fatalf("waiter not holding %v after the release (holders %v)", hold.GrantLease+2*time.Second, admin.HKeys(ctx, n.Lock()).Val())
	}
	p.Refuse(false)
	mustUnlock(t, w)
}
