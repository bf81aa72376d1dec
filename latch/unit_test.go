package latch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// Unit tier: miniredis.

func TestNewPanics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for what, f := range map[string]func(){
		"nil client":      func() { latch.New(nil, "x") },
		"empty name":      func() { latch.New(rdb, "") },
		"poll under 10ms": func() { latch.WithPollInterval(9 * time.Millisecond) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "latch: ") {
					t.Errorf("%s: panic %v, want one naming the package", what, r)
				}
			}()
			f()
		}()
	}
	latch.New(rdb, "x", latch.WithPollInterval(10*time.Millisecond)) // the least allowed
}

func TestUnitSemantics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	semantics(t, rdb, redistest.UniqueName(t))
}

func TestUnitBadInput(t *testing.T) {
	_, rdb := redistest.Mini(t)
	badInput(t, rdb, redistest.UniqueName(t))
}

// TestUnitWaitWoken: waiters on two clients return once the count
// reaches zero, woken by the message rather than the poll.
func TestUnitWaitWoken(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	other := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = other.Close() })
	name := redistest.UniqueName(t)
	ctx := t.Context()
	l := latch.New(rdb, name)
	mustSet(t, l, 2)
	waited := startWaiters(ctx, []redis.UniversalClient{rdb, other}, name, 6, time.Minute)
	redistest.WaitFor(t, 5*time.Second, func() bool {
		return mr.PubSubNumSub(keyspace.NewNames(name).LatchChannel())[keyspace.NewNames(name).LatchChannel()] == 2
	})
	mustCountDown(t, l)
	select {
	case err := <-waited:
		t.Fatalf("a waiter returned at count 1: %v", err)
	default:
	}
	mustCountDown(t, l)
	// The poll interval is a minute: only the message can wake them.
	wantReturned(t, waited, 6, 5*time.Second, "the step to zero")
}

// TestUnitWaitPolls: a latch whose key is deleted by hand, without a
// message, releases its waiters within the poll interval.
func TestUnitWaitPolls(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	name := redistest.UniqueName(t)
	mustSet(t, latch.New(rdb, name), 5)
	const poll = 50 * time.Millisecond
	waited := startWaiters(t.Context(), []redis.UniversalClient{rdb}, name, 3, poll)
	ch := keyspace.NewNames(name).LatchChannel()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.PubSubNumSub(ch)[ch] == 1 })
	mr.Del(keyspace.NewNames(name).Latch())
	deleted := time.Now()
	for range 3 {
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(deleted); d > poll+time.Second { // a noisy machine's slack
		t.Errorf("waiters returned %v after the silent deletion, want within the poll interval %v", d, poll)
	}
}

// TestUnitWaitCtx: a Wait whose ctx ends returns its error and leaves no
// subscription.
func TestUnitWaitCtx(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	name := redistest.UniqueName(t)
	l := latch.New(rdb, name)
	mustSet(t, l, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := l.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `latch: wait "`+name+`"`) {
		t.Fatalf("Wait = %v, want a wrapped DeadlineExceeded", err)
	}
	ch := keyspace.NewNames(name).LatchChannel()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.PubSubNumSub(ch)[ch] == 0 })
	wantCount(t, l, 1)
}

// TestUnitLostReplies: each call whose script reply is lost (the script
// ran) applies once and reports what its first run did.
func TestUnitLostReplies(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	l := latch.New(rdb, name)

	faults.LoseReplies(1)
	if ok, err := l.TrySetCount(ctx, 3); !ok || err != nil {
		t.Fatalf("TrySetCount with a lost reply = %v, %v; want true", ok, err)
	}
	wantCount(t, l, 3)
	faults.LoseReplies(1)
	mustCountDown(t, l)
	wantCount(t, l, 2)
	faults.LoseReplies(1)
	if ok, err := l.Delete(ctx); !ok || err != nil {
		t.Fatalf("Delete with a lost reply = %v, %v; want true", ok, err)
	}
	wantCount(t, l, 0)

	// The step to zero with a lost reply, and a new count set before the
	// resend: the resend takes nothing from it.
	mustSet(t, l, 1)
	// (LoseCancelling's function runs between the script and the report
	// of its lost reply, so before the resend.)
	faults.LoseReplies(1, redistest.LoseCancelling(func() {
		if err := rdb.Set(ctx, keyspace.NewNames(name).Latch(), "7", 0).Err(); err != nil {
			t.Error(err)
		}
	}))
	mustCountDown(t, l)
	wantCount(t, l, 7)

	// Every resend lost too: the error says so, and the count went down
	// once all the same.
	faults.LoseReplies(3)
	if err := l.CountDown(ctx); err == nil {
		t.Fatal("CountDown whose every reply was lost reported success")
	}
	wantCount(t, l, 6)
	if n := len(mr.Keys()); n < 2 {
		t.Fatalf("keys %v: want the count and a receipt", mr.Keys())
	}
}

// TestUnitConcurrentCountDown: 50 goroutines on two clients count a latch
// of 50 down to zero exactly.
func TestUnitConcurrentCountDown(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	other := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = other.Close() })
	name := redistest.UniqueName(t)
	mustSet(t, latch.New(rdb, name), 51)
	var wg sync.WaitGroup
	for i := range 50 {
		l := latch.New([]*redis.Client{rdb, other}[i%2], name)
		wg.Go(func() { mustCountDown(t, l) })
	}
	wg.Wait()
	wantCount(t, latch.New(rdb, name), 1)
}

// startWaiters starts n waiters spread over rdbs; each sends Wait's
// result on the returned channel.
func startWaiters(ctx context.Context, rdbs []redis.UniversalClient, name string, n int, poll time.Duration) <-chan error {
	waited := make(chan error, n)
	for i := range n {
		l := latch.New(rdbs[i%len(rdbs)], name, latch.WithPollInterval(poll))
		go func() { waited <- l.Wait(ctx) }()
	}
	return waited
}
