package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// A multilock member whose network stalls for longer than its lease: the
// group's Done closes before another client can take that member, and
// the holder, reacting to Done as an application would, gives the rest
// back, so the other client gets the group.
func TestMultilockStalledMember(t *testing.T) {
	const lease = time.Second
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	direct := srv.NewClient(t)
	group := func(stalled redis.UniversalClient) *multilock.Group {
		return multilock.New(
			rlock.New(stalled, name+":a", rlock.WithWatchdogTimeout(lease)),
			rlock.New(direct, name+":b", rlock.WithWatchdogTimeout(lease)))
	}
	holder := group(proxy.NewClient(t))
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	other := group(srv.NewClient(t))

	proxy.Stall()
	stalled := time.Now()
	var lost time.Duration
	unlocked := make(chan error, 1)
	go func() {
		<-holder.Done()
		lost = time.Since(stalled)
		unlocked <- holder.Unlock(t.Context())
	}()
	// Only the stalled member is not given back: it frees itself when its
	// lease runs out on the server.
	a := rlock.New(srv.NewClient(t), name+":a")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !isClosed(holder.Done()) {
		t.Fatal("another client took the stalled member while the group's Done was still open")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stalled)
	if took > lease+time.Second {
		t.Errorf("other client took the group %v after the stall, want at most lease + 1s", took)
	}
	proxy.Resume()
	if err := <-unlocked; err == nil {
		t.Error("the stale group's Unlock reported no error for its lost member")
	}
	t.Logf("group Done closed %v after the stall began; the other client took the group after %v",
		lost.Round(time.Millisecond), took.Round(time.Millisecond))
	if err := other.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A quorum of three whose member on one server stalls: the hold stands on
// the other two, and a new round does not wait for the stalled server
// longer than its budget.
func TestQuorumStalledMember(t *testing.T) {
	const lease = time.Second
	var rdbs, stalledRDBs []redis.UniversalClient
	var proxy *redistest.Proxy
	for i := range 3 {
		srv := redistest.Start(t)
		rdbs = append(rdbs, srv.NewClient(t))
		c := srv.NewClient(t)
		if i == 0 {
			proxy = redistest.NewProxy(t, srv.Addr())
			c = proxy.NewClient(t)
		}
		stalledRDBs = append(stalledRDBs, c)
	}
	quorum := func(clients []redis.UniversalClient, name string) *multilock.Group {
		var ls []multilock.Locker
		for _, c := range clients {
			ls = append(ls, rlock.New(c, name, rlock.WithWatchdogTimeout(lease)))
		}
		return multilock.NewQuorum(ls...)
	}
	holder := quorum(stalledRDBs, "held")
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	proxy.Stall()
	defer proxy.Resume()
	// Past the stalled member's lease, the hold stands on two of three.
	select {
	case <-holder.Done():
		t.Fatal("quorum Done closed with one member of three stalled")
	case <-time.After(2 * lease):
	}
	if ok, err := quorum(rdbs, "held").TryLock(t.Context()); ok {
		t.Fatalf("another quorum took a lock held on two of three servers (%v)", err)
	}

	start := time.Now()
	fresh := quorum(stalledRDBs, "fresh")
	if ok, err := fresh.TryLock(t.Context()); !ok {
		t.Fatalf("TryLock with one member of three stalled = false, %v", err)
	}
	if took := time.Since(start); took > lease {
		t.Errorf("TryLock took %v with a stalled member, want under its budget (lease/3) plus slack", took)
	}
	proxy.Resume()
	if err := fresh.Unlock(t.Context()); err != nil {
		t.Log("fresh quorum Unlock:", err) // its stalled member never held
	}
	if err := holder.Unlock(t.Context()); err == nil {
		t.Error("Unlock reported no error for the member lost in the stall")
	}
}
