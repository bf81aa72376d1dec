package rlock_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestRefusedAttemptCost pins what a refused attempt costs Redis: one
// script running PTTL and HMGET (the owner's count and the mode field of
// a read-write lock under the same name, in one command). Waiters make several such attempts per
// critical section under contention, so every command here is multiplied.
func TestRefusedAttemptCost(t *testing.T) {
	rdb := redistest.Start(t).NewClient(t) // own server: nothing else counts
	ctx := t.Context()
	name := redistest.UniqueName(t)
	holder := rlock.New(rdb, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, rdb)
	ok, err := rlock.New(rdb, name).TryLock(ctx)
	if err != nil || ok {
		t.Fatalf("TryLock on a held lock = %v, %v; want false, nil", ok, err)
	}
	after := commandCalls(t, rdb)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(map[string]int64)
	for cmd, n := range after {
		if d := n - before[cmd]; d > 0 && !bookkeeping[cmd] {
			got[cmd] = d
		}
	}
	want := map[string]int64{"evalsha": 1, "pttl": 1, "hmget": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("a refused attempt ran %v, want %v", got, want)
	}
}

// TestWokenRetryCost pins what a woken waiter's retry costs when the lock
// is still held: one script running PTTL alone, because the waiter's
// previous attempt already checked the owner and the type.
func TestWokenRetryCost(t *testing.T) {
	rdb := redistest.Start(t).NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	holder := rlock.New(rdb, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(ctx)
	start := commandCalls(t, rdb)
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- rlock.New(rdb, name).Lock(wctx) }()
	// Parked: subscribed, after an attempt before and one after subscribing.
	channel := internal.NewNames(name).Channel()
	var before map[string]int64
	redistest.WaitFor(t, 2*time.Second, func() bool {
		before = commandCalls(t, rdb)
		return before["evalsha"]-start["evalsha"] == 2 && redistest.NumSub(t, rdb, channel) == 1
	})
	if err := rdb.Publish(ctx, channel, "1").Err(); err != nil { // a wake-up with the lock still held
		t.Fatal(err)
	}
	var got map[string]int64
	redistest.WaitFor(t, 2*time.Second, func() bool {
		got = make(map[string]int64)
		for cmd, n := range commandCalls(t, rdb) {
			if d := n - before[cmd]; d > 0 && !bookkeeping[cmd] && cmd != "publish" {
				got[cmd] = d
			}
		}
		return got["evalsha"] >= 1
	})
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter's Lock = %v, want context.Canceled", err)
	}
	want := map[string]int64{"evalsha": 1, "pttl": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("a woken waiter's retry ran %v, want %v", got, want)
	}
}

// bookkeeping are the commands of the tests' own probes and of go-redis
// dialling a connection, which may fall inside a measured window.
var bookkeeping = map[string]bool{"info": true, "pubsub|numsub": true, "hello": true, "client|setinfo": true, "ping": true}

// commandCalls reads the calls per command from INFO commandstats.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(map[string]int64)
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
	}
	return calls
}
