package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// A name belongs to one kind of primitive for as long as any key of it
// exists, also while its main key is absent: a leased semaphore with its
// total set and no permit out, a mutex's line whose holder's lease ran
// out, a read-write lock's announced writers or readers' turn, a lock's
// fencing counter after its release. Every other kind's first call on the
// name is ErrWrongType and changes nothing; the same kind's goes on.
func TestOneKindPerNameMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	oneKindPerName(t, rdb)
}

func TestOneKindPerName(t *testing.T) {
	oneKindPerName(t, redistest.SharedServer(t).NewClient(t))
}

// kind of primitive, as the keys of a name tell it.
type kind string

const (
	mutexKind  kind = "mutex" // rlock, fairlock, election
	rwKind     kind = "rwlock"
	countKind  kind = "semaphore"
	leasedKind kind = "leased"
)

// firstCall is a primitive's first call on a name.
type firstCall struct {
	what string
	kind kind
	call func(ctx context.Context, rdb redis.UniversalClient, name string) error
}

var firstCalls = []firstCall{
	{"rlock.TryLock", mutexKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		m := rlock.New(rdb, name)
		if _, err := m.TryLock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	}},
	{"fairlock.TryLock", mutexKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		m := fairlock.New(rdb, name)
		if _, err := m.TryLock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	}},
	{"election.Campaign", mutexKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		e := election.New(rdb, name)
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := e.Campaign(ctx, "me"); err != nil {
			return err
		}
		return e.Resign(ctx)
	}},
	{"rwlock.TryLock", rwKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		rw := rwlock.New(rdb, name)
		if _, err := rw.TryLock(ctx); err != nil {
			return err
		}
		return rw.Unlock(ctx)
	}},
	{"rwlock.TryRLock", rwKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		rw := rwlock.New(rdb, name)
		if _, err := rw.TryRLock(ctx); err != nil {
			return err
		}
		return rw.RUnlock(ctx)
	}},
	{"Semaphore.TrySetPermits", countKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		_, err := semaphore.New(rdb, name).TrySetPermits(ctx, 3)
		return err
	}},
	{"Semaphore.Release", countKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		return semaphore.New(rdb, name).Release(ctx, 1)
	}},
	{"Leased.TrySetPermits", leasedKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		_, err := semaphore.NewLeased(rdb, name).TrySetPermits(ctx, 3)
		return err
	}},
	{"Leased.AddPermits", leasedKind, func(ctx context.Context, rdb redis.UniversalClient, name string) error {
		return semaphore.NewLeased(rdb, name).AddPermits(ctx, 1)
	}},
}

// leftover is what a primitive leaves under a name while its main key
// is absent; keeps lists the kinds whose keys it is (a fencing counter
// is every lock's).
type leftover struct {
	what  string
	keeps []kind
	make  func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string)
}

var leftovers = []leftover{
	{"a leased semaphore's total, no permit out", []kind{leasedKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		if _, err := semaphore.NewLeased(rdb, name).TrySetPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
	}},
	{"a fenced lock's counter after its release", []kind{mutexKind, rwKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		m := rlock.New(rdb, name, rlock.WithFencing())
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}},
	// A holder's lease ran out with a waiter in line: the line outlives
	// the lock hash until the waiter's next attempt.
	{"a mutex's line", []kind{mutexKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		n := keyspace.NewNames(name)
		rdb.RPush(ctx, n.Queue(), "waiter")
		rdb.PExpire(ctx, n.Queue(), time.Minute)
	}},
	{"a fair lock's waiter deadlines", []kind{mutexKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		n := keyspace.NewNames(name)
		rdb.ZAdd(ctx, n.Timeouts(), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "waiter"})
		rdb.PExpire(ctx, n.Timeouts(), time.Minute)
	}},
	{"a read-write lock's announced writer", []kind{rwKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		n := keyspace.NewNames(name)
		rdb.ZAdd(ctx, n.Writers(), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "writer"})
		rdb.PExpire(ctx, n.Writers(), time.Minute)
	}},
	{"a read-write lock's readers' turn", []kind{rwKind}, func(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string) {
		n := keyspace.NewNames(name)
		rdb.ZAdd(ctx, n.Turn(), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "reader"})
		rdb.PExpire(ctx, n.Turn(), time.Minute)
	}},
}

func oneKindPerName(t *testing.T, rdb redis.UniversalClient) {
	for _, left := range leftovers {
		for _, c := range firstCalls {
			if slices.Contains(left.keeps, c.kind) {
				continue
			}
			t.Run(left.what+"/"+c.what, func(t *testing.T) {
				ctx := t.Context()
				name := redistest.UniqueName(t)
				left.make(t, ctx, rdb, name)
				before := nameKeys(t, rdb, name)
				err := c.call(ctx, rdb, name)
				if !errors.Is(err, semaphore.ErrWrongType) {
					t.Fatalf("%s on a name with %s = %v, want ErrWrongType", c.what, left.what, err)
				}
				if after := nameKeys(t, rdb, name); !slices.Equal(before, after) {
					t.Fatalf("%s changed the keys:\nbefore %q\nafter  %q", c.what, before, after)
				}
			})
		}
	}
	// The case: a mutex taken on a leased semaphore's name made
	// the application's own TrySetPermits fail. Now the mutex is refused,
	// and the semaphore goes on.
	ctx := t.Context()
	name := redistest.UniqueName(t)
	l := semaphore.NewLeased(rdb, name)
	if _, err := l.TrySetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := rlock.New(rdb, name).TryLock(ctx); !errors.Is(err, rlock.ErrWrongType) {
		t.Fatalf("rlock.TryLock on a leased semaphore's name = %v, want ErrWrongType", err)
	}
	if ok, err := l.TrySetPermits(ctx, 5); ok || err != nil {
		t.Fatalf("TrySetPermits on its own name = %v, %v; want false, nil (a total exists)", ok, err)
	}
	id := mustTryAcquireLeased(t, l, time.Minute)
	if err := l.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// nameKeys lists every key of name with its type and content.
func nameKeys(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	for _, k := range redistest.Keys(t, rdb, keyspace.NewNames(name).Lock()+"*") {
		typ := rdb.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		}
		out = append(out, fmt.Sprintf("%s %s %v", k, typ, v))
	}
	slices.Sort(out)
	return out
}
