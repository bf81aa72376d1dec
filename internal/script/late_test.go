package script_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// deadlineRows runs, per script that changes a count under a receipt, one
// request r of it on a name whose keys setup prepared.
var deadlineRows = []struct {
	name  string
	setup func(ctx context.Context, rdb *redis.Client, n keyspace.Names)
	run   func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error
}{
	{"semaphore_acquire", setPermits, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.SemaphoreAcquire(ctx, rdb, semKeys(n), r, 1, nil).Result())
	}},
	{"semaphore_undo", takenPermit, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		r.Receipt = n.Receipt(keyspace.ReceiptAcquire, "taken")
		return errOf(script.SemaphoreUndo(ctx, rdb, semKeys(n), r, false, nil).Result())
	}},
	{"semaphore_release", setPermits, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.SemaphoreRelease(ctx, rdb, semKeys(n), r, 1, false, nil).Result())
	}},
	{"semaphore_setpermits", setPermits, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.SemaphoreSetPermits(ctx, rdb, semKeys(n), r, 7, false, false, nil).Result())
	}},
	{"semaphore_drain", setPermits, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.SemaphoreDrain(ctx, rdb, semKeys(n), r, nil).Result())
	}},
	{"leased_setpermits", nothing, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.LeasedSetPermits(ctx, rdb, leasedKeys(n), r, 3, false, false).Result())
	}},
	{"leased_addpermits", nothing, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.LeasedAddPermits(ctx, rdb, leasedKeys(n), r, 3, false).Result())
	}},
	{"latch_trysetcount", nothing, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.LatchTrySetCount(ctx, rdb, latchKeys(n), r, 2).Result())
	}},
	{"latch_countdown", setCount, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.LatchCountDown(ctx, rdb, latchKeys(n), r, false).Result())
	}},
	{"latch_delete", setCount, func(ctx context.Context, rdb *redis.Client, n keyspace.Names, r script.Request) error {
		return errOf(script.LatchDelete(ctx, rdb, latchKeys(n), r, false).Result())
	}},
}

// TestDeadlines: a request that runs after its deadline, or with one
// further ahead of the server's clock than its receipt lives, changes
// nothing and is answered "LATE <server time>"; one in time acts and
// writes a receipt that lives a receipt lifetime past the deadline.
func TestDeadlines(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, row := range deadlineRows {
			t.Run(row.name, func(t *testing.T) {
				ctx := t.Context()
				n := keyspace.NewNames(redistest.UniqueName(t))
				row.setup(ctx, rdb, n)
				before := snapshot(t, rdb, n)
				now := time.Now()
				for what, deadline := range map[string]time.Time{
					"past":      now.Add(-time.Second),
					"far ahead": now.Add(2 * exactly.ReceiptTTL),
				} {
					r := script.Request{Receipt: n.Receipt("test", what), TTL: exactly.ReceiptTTL, Deadline: deadline.UnixMilli()}
					err := row.run(ctx, rdb, n, r)
					server, late := exactly.Late(err)
					if !late || server < now.Add(-time.Minute).UnixMilli() {
						t.Fatalf("a request with its deadline %s = %v; want LATE and the server's time", what, err)
					}
					if after := snapshot(t, rdb, n); !maps.Equal(before, after) {
						t.Fatalf("a request refused as late changed %v into %v", before, after)
					}
				}
				deadline := now.Add(exactly.RequestWindow)
				r := script.Request{Receipt: n.Receipt("test", "in time"), TTL: exactly.ReceiptTTL, Deadline: deadline.UnixMilli()}
				if err := row.run(ctx, rdb, n, r); err != nil {
					t.Fatalf("a request in time: %v", err)
				}
				ttl := rdb.PTTL(ctx, r.Receipt).Val()
				if row.name == "semaphore_undo" {
					ttl = rdb.PTTL(ctx, n.Receipt(keyspace.ReceiptAcquire, "taken")).Val()
				}
				if want := time.Until(deadline) + exactly.ReceiptTTL - time.Second; ttl < want {
					t.Fatalf("the receipt lives %v, want at least %v: a receipt lifetime past the deadline", ttl, want)
				}
			})
		}
	})
}

func semKeys(n keyspace.Names) script.SemaphoreKeys {
	return script.SemaphoreKeys{Permits: n.Lock(), Channel: n.Channel()}
}

func leasedKeys(n keyspace.Names) script.LeasedKeys {
	return script.LeasedKeys{Leases: n.Lock(), Permits: n.Sub("permits"), Channel: n.Channel()}
}

func latchKeys(n keyspace.Names) script.LatchKeys {
	return script.LatchKeys{Count: n.Latch(), Channel: n.LatchChannel()}
}

func setPermits(ctx context.Context, rdb *redis.Client, n keyspace.Names) {
	rdb.Set(ctx, n.Lock(), 5, 0)
}
func setCount(ctx context.Context, rdb *redis.Client, n keyspace.Names) {
	rdb.Set(ctx, n.Latch(), 3, 0)
}
func nothing(context.Context, *redis.Client, keyspace.Names) {}

// takenPermit: a semaphore of 5 of which one request took 2.
func takenPermit(ctx context.Context, rdb *redis.Client, n keyspace.Names) {
	rdb.Set(ctx, n.Lock(), 3, 0)
	rdb.Set(ctx, n.Receipt(keyspace.ReceiptAcquire, "taken"), 2, time.Minute)
}

// snapshot returns every key of the name n and what it holds (a sorted
// set's members with their scores).
func snapshot(t *testing.T, rdb *redis.Client, n keyspace.Names) map[string]string {
	t.Helper()
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, "*"+n.Lock()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string)
	for _, k := range keys {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			m[k] = rdb.Get(ctx, k).Val()
		case "hash":
			m[k] = fmt.Sprint(rdb.HGetAll(ctx, k).Val())
		case "list":
			m[k] = fmt.Sprint(rdb.LRange(ctx, k, 0, -1).Val())
		case "zset":
			m[k] = fmt.Sprint(rdb.ZRangeWithScores(ctx, k, 0, -1).Val())
		default:
			m[k] = typ
		}
	}
	return m
}

func errOf[T any](_ T, err error) error { return err }

// TestAcquireDeadlines: an acquisition (or a waiter's withdrawal) that
// runs after its deadline, or with one further ahead of the server's
// clock than twice the request window, takes nothing, joins no line and
// is answered "LATE <server time>".
func TestAcquireDeadlines(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		rows := map[string]func(n keyspace.Names, deadline int64) error{
			"rlock_acquire": func(n keyspace.Names, deadline int64) error {
				k := script.LockKeys{Lock: n.Lock(), Fence: n.Fence(), Queue: n.Queue(), Places: n.Place(""), Waiter: n.WaiterChannel(""), Channel: n.Channel()}
				return errOf(script.ReentrantTake(ctx, rdb, k, script.TakeArgs{ID: "o:1", Lease: time.Minute, Fencing: true, Patience: time.Minute, Deadline: deadline, Placed: true}).Result())
			},
			"fairlock_acquire": func(n keyspace.Names, deadline int64) error {
				k := script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place("")}
				return errOf(script.FairTake(ctx, rdb, k, script.FairTakeArgs{ID: "o:1", Lease: time.Minute, Fencing: true, Patience: time.Minute, Sharded: false, GrantLease: time.Second, Deadline: deadline}).Result())
			},
			"rwlock_readlock": func(n keyspace.Names, deadline int64) error {
				return errOf(script.RWReadTake(ctx, rdb, n.RWKeys(), script.RWReadArgs{ID: "o:1", Lease: time.Minute, Announce: true, Patience: time.Minute, Deadline: deadline}).Result())
			},
			"rwlock_writelock": func(n keyspace.Names, deadline int64) error {
				return errOf(script.RWWriteTake(ctx, rdb, n.RWKeys(), script.RWWriteArgs{ID: "o:1", Lease: time.Minute, Fencing: true, Announce: true, Patience: time.Minute, Deadline: deadline}).Result())
			},
			"rwlock_withdraw": func(n keyspace.Names, deadline int64) error {
				return errOf(script.RWWithdraw(ctx, rdb, n.RWKeys(), "o", false, false, deadline).Result())
			},
			"leased_acquire": func(n keyspace.Names, deadline int64) error {
				return errOf(script.LeasedAcquire(ctx, rdb, leasedKeys(n), "o", time.Minute, false, deadline).Result())
			},
		}
		for name, run := range rows {
			t.Run(name, func(t *testing.T) {
				n := keyspace.NewNames(redistest.UniqueName(t))
				if name == "leased_acquire" {
					rdb.Set(ctx, n.Sub("permits"), 1, 0)
				}
				before := snapshot(t, rdb, n)
				now := time.Now()
				for what, deadline := range map[string]time.Time{
					"past":      now.Add(-time.Second),
					"far ahead": now.Add(3 * exactly.RequestWindow),
				} {
					err := run(n, deadline.UnixMilli())
					if _, late := exactly.Late(err); !late {
						t.Fatalf("an attempt with its deadline %s = %v; want LATE", what, err)
					}
					if after := snapshot(t, rdb, n); !maps.Equal(before, after) {
						t.Fatalf("an attempt refused as late left %v, before %v", after, before)
					}
				}
				if err := run(n, now.Add(exactly.RequestWindow).UnixMilli()); err != nil {
					t.Fatalf("an attempt in time: %v", err)
				}
			})
		}
	})
}
