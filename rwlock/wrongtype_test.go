package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// The other locks on a name a read-write lock holds: the hash has a mode
// field, which no other lock writes. Their Lock, TryLock and ForceUnlock
// report ErrWrongType (the same value in every package) at once, whatever
// mode the holder is in, and change nothing, as RLock and Lock do on their
// names (TestWrongTypeMini).
func TestOtherLocksOnItsNameMini(t *testing.T) { testOtherLocks(t, miniEnv(t)) }

func TestOtherLocksOnItsName(t *testing.T) { onBoth(t, testOtherLocks) }

// mutex is what rlock and fairlock have in common.
type mutex interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	ForceUnlock(ctx context.Context) (bool, error)
}

func testOtherLocks(t *testing.T, e env) {
	others := []struct {
		kind string
		new  func(rdb redis.UniversalClient, name string) mutex
	}{
		{"rlock", func(rdb redis.UniversalClient, name string) mutex { return rlock.New(rdb, name) }},
		{"fairlock", func(rdb redis.UniversalClient, name string) mutex { return fairlock.New(rdb, name) }},
	}
	for _, mode := range sides {
		for _, other := range others {
			t.Run(other.kind+" on "+mode.name, func(t *testing.T) {
				ctx := t.Context()
				name := redistest.UniqueName(t)
				rw := rwlock.New(e.client(t), name)
				if err := mode.lock(rw, ctx); err != nil {
					t.Fatal(err)
				}
				before := dumpKeys(t, e.node(t, name), lockKey(name)+"*")
				m := other.new(e.client(t), name)
				if ok, err := m.TryLock(ctx); ok || !errors.Is(err, rwlock.ErrWrongType) {
					t.Fatalf("TryLock = %v, %v; want ErrWrongType", ok, err)
				}
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				start := time.Now()
				if err := m.Lock(wctx); !errors.Is(err, rwlock.ErrWrongType) {
					t.Fatalf("Lock = %v, want ErrWrongType", err)
				}
				within(t, "Lock reported the wrong type", time.Since(start), 0, time.Second)
				if ok, err := m.ForceUnlock(ctx); ok || !errors.Is(err, rwlock.ErrWrongType) {
					t.Fatalf("ForceUnlock = %v, %v; want ErrWrongType", ok, err)
				}
				if after := dumpKeys(t, e.node(t, name), lockKey(name)+"*"); after != before {
					t.Fatalf("data changed:\nbefore %s\nafter  %s", before, after)
				}
				if err := mode.unlock(rw, ctx); err != nil {
					t.Fatal(err)
				}
				e.assertNoKeys(t, name)
			})
		}
	}
}
