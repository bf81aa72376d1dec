package perclient_test

import (
	"context"
	"errors"
	"github.com/redisync/redisync/internal/perclient"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// The client's wall clock steps a minute forward (an NTP step, a VM
// resumed) while a reader waits behind a write hold, and the reader's
// process is then cut off: the announcement its keeper wrote after the
// step lapses WriterPatience after that refresh on the server's clock, not
// a minute later. So when the write release comes later than that, with a
// live reader announced too (whose client keeps the readers' set alive),
// the cut-off reader is not given a turn: once the live reader has come
// and gone, a writer holds at once, not when the turn lapses.
func TestKeeperClockStepForward(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := proxy.NewClient(t)
	c := perclient.Attach(rdb)
	defer c.Detach()
	var step atomic.Int64
	perclient.SetKeeperWall(c, func() time.Time { return time.Now().Add(time.Duration(step.Load())) })

	name := redistest.UniqueName(t)
	readers := keyspace.NewNames(name).Readers()
	ctx := t.Context()
	first := rwlock.New(srv.NewClient(t), name)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	stepped := rwlock.New(rdb, name)
	sctx, leave := context.WithCancel(ctx)
	steppedRead := make(chan error, 1)
	go func() { steppedRead <- stepped.RLock(sctx) }()
	defer func() {
		leave()
		proxy.Resume()
		if err := <-steppedRead; !errors.Is(err, context.Canceled) {
			t.Errorf("the cut-off reader's RLock = %v, want it cancelled", err)
		}
	}()

	// ahead returns how far the lapse of the announcement of member (the
	// first to announce when "") is ahead of the server's clock.
	ahead := func(member string) (time.Duration, string) {
		z := admin.ZRangeWithScores(ctx, readers, 0, -1).Val()
		now := admin.Time(ctx).Val().UnixMilli()
		for _, m := range z {
			if id, _ := m.Member.(string); member == "" || id == member {
				return time.Duration(int64(m.Score)-now) * time.Millisecond, id
			}
		}
		return 0, ""
	}
	// refreshed waits for a keeper round to move the announcement of
	// member.
	refreshed := func(member string) time.Duration {
		first := admin.ZScore(ctx, readers, member).Val()
		redistest.WaitFor(t, 3*time.Second, func() bool { return admin.ZScore(ctx, readers, member).Val() != first })
		d, _ := ahead(member)
		return d
	}
	var member string
	redistest.WaitFor(t, 5*time.Second, func() bool {
		_, member = ahead("")
		return member != ""
	})
	live := rwlock.New(srv.NewClient(t), name)
	liveRead := make(chan error, 1)
	go func() {
		err := live.RLock(ctx)
		if err == nil {
			err = live.RUnlock(ctx)
		}
		liveRead <- err
	}()
	redistest.WaitFor(t, 5*time.Second, func() bool { return admin.ZCard(ctx, readers).Val() == 2 })

	before := refreshed(member) // a round that read the server's clock
	step.Store(int64(time.Minute))
	after := refreshed(member) // the first round on the stepped clock
	proxy.Stall()              // the reader's process, cut off, refreshes no more
	cut := time.Now()
	if after > rwlock.WaiterTimeout+500*time.Millisecond {
		t.Errorf("after the client's clock stepped 1m forward, the announcement lapses %v ahead of the server's clock, want at most about WriterPatience (%v before the step)",
			after.Round(time.Millisecond), before.Round(time.Millisecond))
	}

	// Past the cut-off reader's lapse, the write release gives the turn
	// to the live reader, which comes and goes.
	time.Sleep(rwlock.WaiterTimeout + 500*time.Millisecond)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-liveRead; err != nil {
		t.Fatalf("the live reader: %v", err)
	}
	gone := time.Now()
	writer := rwlock.New(srv.NewClient(t), name)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := writer.Lock(wctx); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(gone)
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if waited > 500*time.Millisecond {
		t.Errorf("the writer held %v after the live reader left (%v after the cut-off reader's last refresh), want at once: that reader's announcement had lapsed",
			waited.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))
	}
	t.Logf("announcement ahead of the server's clock: %v before the step, %v after; writer held %v after the live reader left",
		before.Round(time.Millisecond), after.Round(time.Millisecond), waited.Round(time.Millisecond))
}
