package election_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Unit tier: miniredis.

func TestCampaignLeaderResignMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	a, b := election.New(rdb, "sched"), election.New(rdb, "sched")
	if _, err := a.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
	}
	if a.Term() != 0 || !redistest.Closed(a.Done()) {
		t.Fatal("a handle that never led has a term or an open Done")
	}
	mustCampaign(t, a, "a:1")
	l := mustLeader(t, b)
	if l.Value != "a:1" || l.Term == 0 || l.Term != a.Term() {
		t.Fatalf("Leader = %+v, want a:1 with a's term %d", l, a.Term())
	}
	if redistest.Closed(a.Done()) {
		t.Fatal("the leader's Done is closed")
	}
	// Campaign by the leader returns at once, its value unchanged.
	mustCampaign(t, a, "a:2")
	if l := mustLeader(t, b); l.Value != "a:1" {
		t.Fatalf("Leader after a second Campaign = %+v, want a:1", l)
	}

	got := make(chan error, 1)
	go func() { got <- b.Campaign(ctx, "b:1") }()
	waitLine(t, rdb, "sched", 1)
	done := a.Done()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(done) || a.Term() != 0 {
		t.Fatal("after Resign: Done open or a term left")
	}
	if err := <-got; err != nil {
		t.Fatalf("b's Campaign: %v", err)
	}
	if l2 := mustLeader(t, a); l2.Value != "b:1" || l2.Term <= l.Term || l2.Term != b.Term() {
		t.Fatalf("Leader after the resignation = %+v, want b:1 with a term above %d (b's %d)", l2, l.Term, b.Term())
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatalf("Resign of a handle that does not lead = %v, want nil", err)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader after the last resignation = %v, want ErrNoLeader", err)
	}
	assertNoKeys(t, rdb, "sched")
}

func TestProclaimMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	a, b := election.New(rdb, "p"), election.New(rdb, "p")
	if err := a.Proclaim(ctx, "x"); !errors.Is(err, election.ErrNotLeader) || !errors.Is(err, errs.ErrNotHeld) {
		t.Fatalf("Proclaim before leading = %v, want ErrNotLeader (and ErrNotHeld)", err)
	}
	mustCampaign(t, a, "host-7:8080")
	term := a.Term()
	if err := a.Proclaim(ctx, "host-7:9090"); err != nil {
		t.Fatal(err)
	}
	if l := mustLeader(t, b); l.Value != "host-7:9090" || l.Term != term {
		t.Fatalf("Leader after Proclaim = %+v, want host-7:9090 in term %d", l, term)
	}
	if err := b.Proclaim(ctx, "b"); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("Proclaim by a candidate that does not lead = %v", err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Proclaim(ctx, "y"); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("Proclaim after Resign = %v", err)
	}
	assertNoKeys(t, rdb, "p")
}

func TestValueLimitMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	e := election.New(rdb, "big")
	big := strings.Repeat("v", election.MaxValueSize+1)
	for op, call := range map[string]func() error{
		"campaign": func() error { return e.Campaign(ctx, big) },
		"run":      func() error { return e.Run(ctx, big, func(context.Context) error { return nil }) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "64 KiB") {
			t.Errorf("%s with a %d-byte value = %v, want a clear refusal", op, len(big), err)
		}
	}
	assertNoKeys(t, rdb, "big")
	mustCampaign(t, e, strings.Repeat("v", election.MaxValueSize))
	if err := e.Proclaim(ctx, big); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("Proclaim with a %d-byte value = %v, want a clear refusal", len(big), err)
	}
	if l := mustLeader(t, e); len(l.Value) != election.MaxValueSize {
		t.Errorf("the leader's value changed to %d bytes", len(l.Value))
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNewPanicsMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for name, f := range map[string]func(){
		"empty name":    func() { election.New(rdb, "") },
		"nil client":    func() { election.New(nil, "x") },
		"short timeout": func() { election.New(rdb, "x", election.WithWatchdogTimeout(time.Millisecond)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			f()
		}()
	}
}

// A name that another primitive uses is ErrWrongType for every call, and
// nothing of it changes. (A latch's keys have a suffix of their own: a
// latch may share its name with a lock or an election.)
func TestWrongTypeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	others := map[string]func(name string) func(){
		"rlock": func(name string) func() {
			m := rlock.New(rdb, name)
			mustOK(t, m.Lock(ctx))
			return func() { mustOK(t, m.Unlock(ctx)) }
		},
		"fairlock": func(name string) func() {
			m := fairlock.New(rdb, name)
			mustOK(t, m.Lock(ctx))
			return func() { mustOK(t, m.Unlock(ctx)) }
		},
		"rwlock": func(name string) func() {
			m := rwlock.New(rdb, name)
			mustOK(t, m.RLock(ctx))
			return func() { mustOK(t, m.RUnlock(ctx)) }
		},
		"semaphore": func(name string) func() {
			mustOK(t, semaphore.New(rdb, name).SetPermits(ctx, 3))
			return func() { rdb.Del(ctx, keyspace.NewNames(name).Lock()) }
		},
	}
	for kind, take := range others {
		t.Run(kind, func(t *testing.T) {
			name := "taken-" + kind
			undo := take(name)
			before := dump(t, rdb, name)
			e := election.New(rdb, name)
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := e.Campaign(cctx, "v"); !errors.Is(err, election.ErrWrongType) {
				t.Errorf("Campaign = %v, want ErrWrongType", err)
			}
			if _, err := e.Leader(ctx); !errors.Is(err, election.ErrWrongType) {
				t.Errorf("Leader = %v, want ErrWrongType", err)
			}
			if after := dump(t, rdb, name); after != before {
				t.Errorf("the %s's keys changed:\nbefore %s\nafter  %s", kind, before, after)
			}
			undo()
		})
	}
	// And the other way round: a lock on an election's name.
	e := election.New(rdb, "elected")
	mustCampaign(t, e, "v")
	before := dump(t, rdb, "elected")
	for kind, try := range map[string]func(context.Context) (bool, error){
		"fairlock": fairlock.New(rdb, "elected").TryLock,
		"rlock":    rlock.New(rdb, "elected").TryLock,
		"rwlock":   rwlock.New(rdb, "elected").TryLock,
	} {
		if ok, err := try(ctx); ok || !errors.Is(err, errs.ErrWrongType) {
			t.Errorf("%s TryLock on an election = %v, %v; want ErrWrongType", kind, ok, err)
		}
	}
	if after := dump(t, rdb, "elected"); after != before {
		t.Errorf("the election's keys changed:\nbefore %s\nafter  %s", before, after)
	}
	mustOK(t, e.Resign(ctx))
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustCampaign(t testing.TB, e *election.Election, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Campaign(ctx, value); err != nil {
		t.Fatal(err)
	}
}

func mustLeader(t testing.TB, e *election.Election) election.Leader {
	t.Helper()
	l, err := e.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitLive waits until a waiter of the election name is live in line: its
// deadline there, on the server's clock, has not passed.
func waitLive(t testing.TB, rdb redis.UniversalClient, name string) {
	t.Helper()
	timeouts := keyspace.NewNames(name).Timeouts()
	redistest.WaitFor(t, 5*time.Second, func() bool {
		now, err := rdb.Time(context.Background()).Result()
		return err == nil && rdb.ZCount(context.Background(), timeouts, "("+strconv.FormatInt(now.UnixMilli(), 10), "+inf").Val() > 0
	})
}

// waitLine waits until n candidates wait in the line of the election
// called name.
func waitLine(t testing.TB, rdb redis.UniversalClient, name string, n int64) {
	t.Helper()
	queue := keyspace.NewNames(name).Queue()
	redistest.WaitFor(t, 5*time.Second, func() bool { return rdb.LLen(context.Background(), queue).Val() == n })
}
