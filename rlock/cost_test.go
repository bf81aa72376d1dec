package rlock_test

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
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
	// TIME reads the server's clock for the attempt's deadline, past which
	// a copy of it changes nothing.
	want := map[string]int64{"evalsha": 1, "time": 1, "pttl": 1, "hmget": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("a refused attempt ran %v, want %v", got, want)
	}
}

// TestUncontendedCost pins what an uncontended Lock+Unlock costs Redis,
// the pair users run most: two scripts; the acquire reads the server's
// clock for its deadline (TIME), tells a free lock by PTTL, checks with
// one EXISTS that no other kind of primitive keeps keys under the name
// (a leased semaphore's total, a read-write lock's waiters: the name is
// theirs) and writes the hold with its lease; the release reads the hold and the line and
// deletes the lock. Nothing else: no DEL of a place the wait's first
// attempt cannot have, and no PUBLISH when no group watches the lock.
func TestUncontendedCost(t *testing.T) {
	rdb := redistest.Start(t).NewClient(t)
	m := rlock.New(rdb, redistest.UniqueName(t))
	lockUnlock := lockUnlocker(t, m)
	lockUnlock() // loads the scripts
	before := commandCalls(t, rdb)
	lockUnlock()
	got := make(map[string]int64)
	for cmd, n := range commandCalls(t, rdb) {
		if d := n - before[cmd]; d > 0 && !bookkeeping[cmd] {
			got[cmd] = d
		}
	}
	want := map[string]int64{"evalsha": 2, "time": 1, "pttl": 1, "exists": 1, "hset": 1, "pexpire": 1, "hmget": 1, "lpop": 1, "del": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("an uncontended Lock+Unlock ran %v, want %v", got, want)
	}
}

// TestGrantCost pins what a handoff costs: the release script grants the
// lock to the parked waiter, and the waiter's process completes the hold
// without running a script of its own. A waiter of another handle on the
// releaser's client is granted the lock the same way: one place decides
// who holds next, the release in Redis.
func TestGrantCost(t *testing.T) {
	srv := redistest.Start(t)
	want := map[string]int64{
		"evalsha": 1, "hmget": 1, "lpop": 1, "getdel": 1, "del": 1, "hset": 1, "pexpire": 1, "publish": 1,
	}
	t.Run("grant", func(t *testing.T) {
		grantCost(t, srv.NewClient(t), srv.NewClient(t), want)
	})
	t.Run("same client", func(t *testing.T) {
		rdb := srv.NewClient(t)
		grantCost(t, rdb, rdb, want)
	})
}

// grantCost measures the handoff from a holder on rdb to a waiter on
// other: the commands of the release, which must be want.
func grantCost(t *testing.T, rdb, other *redis.Client, want map[string]int64) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	warm := rlock.New(rdb, name+"-warm") // loads the unlock script on the fresh server
	if err := warm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The waiter's client checks the server's version before its first
	// script, once in its life (script.CheckServer): not a cost of the
	// handoff.
	if err := script.CheckServer(ctx, other); err != nil {
		t.Fatal(err)
	}
	holder := rlock.New(rdb, name)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	start := commandCalls(t, rdb)
	waited := make(chan error, 1)
	waiter := rlock.New(other, name)
	go func() { waited <- waiter.Lock(ctx) }()
	// Parked: in line and subscribed, after one attempt (whose script
	// reads the holders' ids once: no later hold of the waiter's handle
	// stands, see lua/part/later.lua) and, once subscribed, a check that
	// the lock is still another's (no grant, nor a release another way,
	// came in between).
	var before map[string]int64
	redistest.WaitFor(t, 900*time.Millisecond, func() bool { // before its next attempt, a second on
		before = commandCalls(t, rdb)
		return before["hkeys"]-start["hkeys"] == 2 && numSub(t, rdb, name) == 1
	})
	// Its one attempt: refused, it takes a place in line (a key of its
	// own, whose expiry is its liveness) and joins the list.
	joined := make(map[string]int64)
	for cmd, n := range before {
		if d := n - start[cmd]; d > 0 && !bookkeeping[cmd] && cmd != "hkeys" && cmd != "evalsha" {
			joined[cmd] = d
		}
	}
	if n := before["evalsha"] - start["evalsha"]; n != 1 {
		t.Fatalf("the waiter parked after %d scripts, want 1", n)
	}
	if want := map[string]int64{"time": 1, "pttl": 1, "hmget": 1, "set": 1, "rpush": 1, "pexpire": 1}; !maps.Equal(joined, want) {
		t.Fatalf("a waiter joining the line ran %v besides EVALSHA, want %v", joined, want)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	got := make(map[string]int64)
	for cmd, n := range commandCalls(t, rdb) {
		if d := n - before[cmd]; d > 0 && !bookkeeping[cmd] && cmd != "lrange" {
			got[cmd] = d
		}
	}
	// The unlock: its own field, then the grant to the waiter in line,
	// whose place tells in one GETDEL that it is live and what it asked.
	if !maps.Equal(got, want) {
		t.Fatalf("a handoff ran %v, want %v", got, want)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// bookkeeping are the commands of the tests' own probes and of go-redis
// dialling a connection, which may fall inside a measured window.
var bookkeeping = map[string]bool{"info": true, "pubsub|numsub": true, "hello": true, "client|setinfo": true, "ping": true, "subscribe": true, "unsubscribe": true}

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

// TestUncontendedAllocs pins what an uncontended Lock+Unlock costs the
// client in allocations, the pair users run most: 57 when it was written
// (go-redis 9.23, Go 1.26; with or without -race), 68 before a script
// call stopped boxing its hash and flags and building closures on every
// call (see CHANGELOG.md). Allocations are counted in the whole process,
// so the server is a real one, in a process of its own (a miniredis
// would count its Lua's); the bound leaves a few for go-redis's and the
// runtime's changes. Unlike time, the count does not depend on the
// machine or its load.
func TestUncontendedAllocs(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	m := rlock.New(rdb, redistest.UniqueName(t))
	lockUnlock := lockUnlocker(t, m)
	lockUnlock() // the client's version check, the scripts loaded, the pool's connection
	const most = 60
	if n := testing.AllocsPerRun(200, lockUnlock); n > most {
		t.Fatalf("an uncontended Lock+Unlock allocates %v times, want at most %d", n, most)
	} else {
		t.Logf("an uncontended Lock+Unlock allocates %v times", n)
	}
}

// lockUnlocker returns an uncontended Lock+Unlock of m that fails t on an
// error.
func lockUnlocker(t *testing.T, m *rlock.Mutex) func() {
	return func() {
		if err := m.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
