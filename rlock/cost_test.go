package rlock_test

import (
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

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
		if d := n - before[cmd]; d > 0 && cmd != "info" {
			got[cmd] = d
		}
	}
	want := map[string]int64{"evalsha": 1, "pttl": 1, "hmget": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("a refused attempt ran %v, want %v", got, want)
	}
}

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
