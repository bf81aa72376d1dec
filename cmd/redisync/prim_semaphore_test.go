package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

func TestInspectSemaphores(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name, leasedName := redistest.UniqueName(t), redistest.UniqueName(t)
		s := semaphore.New(b.rdb, name)
		if err := s.SetPermits(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		l := semaphore.NewLeased(b.rdb, leasedName)
		if err := l.SetPermits(ctx, 3); err != nil {
			t.Fatal(err)
		}
		id, err := l.Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rs := inspectJSON(t, b.flags, name, leasedName)
		if rs[0].Kind != kindSemaphore || rs[0].Permits == nil || *rs[0].Permits != 3 {
			t.Errorf("semaphore report = %+v", rs[0])
		}
		if rs[1].Kind != kindSemaphore {
			t.Errorf("leased semaphore report = %+v", rs[1])
		}
		stdout, _ := mustRun(t, exitOK, b.args("inspect", leasedName)...)
		if !strings.Contains(stdout, id) {
			t.Errorf("inspect does not show the leased permit %s:\n%s", id, stdout)
		}
		_, stderr := mustRun(t, exitFailure, b.args("unlock", "--force", name)...)
		if !strings.Contains(stderr, "not a lock") {
			t.Errorf("unlock of a semaphore: %s", stderr)
		}
		_ = l.Release(context.WithoutCancel(ctx), id)
		for _, n := range []string{name, leasedName} {
			if _, err := deleteAll(ctx, b.rdb, globEscape(keyspace.NewNames(n).Lock())+"*"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// inspect counts the live members of a sorted set exactly, however many
// lapsed ones come first (it shows at most keyLimit members): a leased
// semaphore's available permits, an rwlock's waiting readers.
func TestInspectCountsPastKeyLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		leasedName, rwName := redistest.UniqueName(t), redistest.UniqueName(t)
		now, err := b.rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Lapsed a minute ago, or lapsing in a minute (server clock, ms).
		members := func(prefix string, n int, at time.Time) []redis.Z {
			zs := make([]redis.Z, n)
			for i := range zs {
				zs[i] = redis.Z{Score: float64(at.UnixMilli()), Member: fmt.Sprintf("%s%d", prefix, i)}
			}
			return zs
		}
		lapsed, live := members("old", keyLimit+100, now.Add(-time.Minute)), members("new", 7, now.Add(time.Minute))
		ln, rn := keyspace.NewNames(leasedName), keyspace.NewNames(rwName)
		if err := b.rdb.Set(ctx, ln.Sub("permits"), 2000, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{ln.Lock(), rn.Readers()} {
			if err := b.rdb.ZAdd(ctx, key, append(lapsed, live...)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		rs := inspectJSON(t, b.flags, leasedName)
		if r := rs[0]; r.Kind != kindSemaphore || r.Permits == nil || *r.Permits != 2000-7 {
			t.Errorf("leased semaphore with 7 live leases past %d lapsed: %+v, want %d permits available", len(lapsed), r, 2000-7)
		}
		stdout, _ := mustRun(t, exitOK, b.args("inspect", rwName)...)
		if want := fmt.Sprintf("7 reader(s) waiting (%d more lapsed)", len(lapsed)); !strings.Contains(stdout, want) {
			t.Errorf("inspect of an rwlock with 7 live waiting readers past %d lapsed does not say %q:\n%s", len(lapsed), want, stdout)
		}
		for _, n := range []string{leasedName, rwName} {
			if _, err := deleteAll(ctx, b.rdb, globEscape(keyspace.NewNames(n).Lock())+"*"); err != nil {
				t.Fatal(err)
			}
		}
	})
}
