package script_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// marked is one kind of hold as the mark tests drive it: acquire with the
// count the caller believes it has and the attempt's mark, and release
// with the expected count and the mark a give-back names (0: a release).
type marked struct {
	acquire func(ctx context.Context, rdb *redis.Client, held int64, mark uint64) (ok bool, holds int64, err error)
	release func(ctx context.Context, rdb *redis.Client, expect int64, undoes uint64) (holds int64, err error)
}

func markedKinds(name string) map[string]marked {
	const owner, lease = "o", 10 * time.Second
	n := internal.NewNames(name)
	lk := lockKeys(name)
	rk := n.RWKeys(owner)
	rw := func(m script.RWHolds, err error, mode func(script.RWHolds) int64) (bool, int64, error) {
		return m.OK, mode(m), err
	}
	reads := func(m script.RWHolds) int64 { return m.Reads }
	writes := func(m script.RWHolds) int64 { return m.Writes }
	return map[string]marked{
		"rlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, held int64, mark uint64) (bool, int64, error) {
				a, err := script.ReentrantTake(ctx, rdb, lk, script.TakeArgs{Owner: owner, Lease: lease, Fencing: false, Holds: held, Seq: mark, Deadline: redistest.InTime(), Placed: true}).Result()
				return a.OK, a.Holds, err
			},
			release: func(ctx context.Context, rdb *redis.Client, expect int64, undoes uint64) (int64, error) {
				u, err := script.ReentrantUnlock(ctx, rdb, lk, script.ReleaseArgs{Owner: owner, Lease: lease, Sharded: false, Expect: expect, GrantLease: time.Second, Mark: undoes}).Result()
				return u.Holds, err
			},
		},
		"rwlock write": {
			acquire: func(ctx context.Context, rdb *redis.Client, held int64, mark uint64) (bool, int64, error) {
				h, err := script.RWWriteTake(ctx, rdb, rk, script.RWWriteArgs{Owner: owner, Lease: lease, Fencing: false, Writes: held, Announce: false, Patience: time.Second, Mark: mark, Deadline: redistest.InTime(), Reads: -1}).Result()
				return rw(h, err, writes)
			},
			release: func(ctx context.Context, rdb *redis.Client, expect int64, undoes uint64) (int64, error) {
				h, err := script.RWWriteUnlock(ctx, rdb, rk, script.ReleaseArgs{Owner: owner, Lease: lease, Sharded: false, Expect: expect, Mark: undoes}).Result()
				return mismatch(h, writes), err
			},
		},
		"rwlock read": {
			acquire: func(ctx context.Context, rdb *redis.Client, held int64, mark uint64) (bool, int64, error) {
				h, err := script.RWReadTake(ctx, rdb, rk, script.RWReadArgs{Owner: owner, Lease: lease, Reads: held, Announce: false, Patience: time.Second, Mark: mark, Deadline: redistest.InTime(), Writes: -1}).Result()
				return rw(h, err, reads)
			},
			release: func(ctx context.Context, rdb *redis.Client, expect int64, undoes uint64) (int64, error) {
				h, err := script.RWReadUnlock(ctx, rdb, rk, script.ReleaseArgs{Owner: owner, Lease: lease, Sharded: false, Expect: expect, Mark: undoes}).Result()
				return mismatch(h, reads), err
			},
		},
	}
}

// mismatch converts a read-write release's reply to the mutexes' holds.
func mismatch(h script.RWHolds, mode func(script.RWHolds) int64) int64 {
	switch {
	case h.Mismatch:
		return script.UnlockMismatch
	case h.NotHeld:
		return script.UnlockNotHeld
	}
	return mode(h)
}

// TestGiveBackNamesItsAttempt: a give-back undoes the attempt it names
// only while no later attempt of the owner took or reported the hold, and
// an attempt that runs after a later one changes nothing. This is what
// keeps a give-back that Redis runs late from releasing the owner's next
// hold.
func TestGiveBackNamesItsAttempt(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock", "rwlock write", "rwlock read"} {
			t.Run(kind, func(t *testing.T) {
				ctx := t.Context()
				name := redistest.UniqueName(t)
				k := markedKinds(name)[kind]
				step := func(what string, got, want int64, err error) {
					t.Helper()
					if err != nil || got != want {
						t.Fatalf("%s = %d, %v; want %d", what, got, err, want)
					}
				}
				acquire := func(what string, held int64, mark uint64, want int64) {
					t.Helper()
					ok, holds, err := k.acquire(ctx, rdb, held, mark)
					if !ok {
						holds = 0
					}
					step(what, holds, want, err)
				}
				release := func(what string, expect int64, undoes uint64, want int64) {
					t.Helper()
					holds, err := k.release(ctx, rdb, expect, undoes)
					step(what, holds, want, err)
				}

				acquire("attempt 1, its reply lost", 0, 1, 1)
				acquire("attempt 2, which finds the level", 0, 2, 1)
				release("attempt 1's give-back, run late", 1, 1, script.UnlockMismatch)
				acquire("attempt 1 itself, run late as a re-entry", 1, 1, 0)
				release("a plain release", 1, 0, 0)
				acquire("attempt 4", 0, 4, 1)
				release("attempt 4's give-back", 1, 4, 0)
				if n := rdb.Exists(ctx, internal.NewNames(name).Lock()).Val(); n != 0 {
					t.Fatalf("the lock hash is left after the last level's give-back: %v", rdb.HGetAll(ctx, internal.NewNames(name).Lock()).Val())
				}
			})
		}
	})
}

// TestLateAttemptAcrossModes: a read-write lock's owner numbers the
// attempts of both modes in one sequence, so an attempt of either mode
// that runs after a later attempt of the other is refused as late: a read
// attempt after the owner's write attempt would add a read level nobody
// holds, which the write unlock turns into a read hold, and a write
// re-entry after a later read attempt a write level nobody holds.
func TestLateAttemptAcrossModes(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		kinds := markedKinds(redistest.UniqueName(t))
		w, r := kinds["rwlock write"], kinds["rwlock read"]
		step := func(what string, k marked, held int64, mark uint64, wantOK bool, want int64) {
			t.Helper()
			ok, holds, err := k.acquire(ctx, rdb, held, mark)
			if err != nil || ok != wantOK || ok && holds != want {
				t.Fatalf("%s = %v, %d, %v; want %v, %d", what, ok, holds, err, wantOK, want)
			}
		}
		step("write attempt 2", w, 0, 2, true, 1)
		step("read attempt 1, run late", r, 0, 1, false, 0)
		step("read attempt 3 (a downgrade)", r, 0, 3, true, 1)
		step("write re-entry 2, run late", w, 1, 2, false, 0)
		step("write re-entry 4", w, 1, 4, true, 2)
		step("read re-entry 5", r, 1, 5, true, 2)
		for _, rel := range []struct {
			k      marked
			expect int64
			want   int64
		}{{w, 2, 1}, {w, 1, 0}, {r, 2, 1}, {r, 1, 0}} {
			if holds, err := rel.k.release(ctx, rdb, rel.expect, 0); err != nil || holds != rel.want {
				t.Fatalf("release at %d = %d, %v; want %d", rel.expect, holds, err, rel.want)
			}
		}
	})
}
