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
	fk := script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place("")}
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
		"fairlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, held int64, mark uint64) (bool, int64, error) {
				a, err := script.FairTake(ctx, rdb, fk, script.FairTakeArgs{Owner: owner, Lease: lease, Fencing: false, Holds: held, Patience: 0, Sharded: false, GrantLease: time.Second, Seq: mark, Deadline: redistest.InTime()}).Result()
				return a.OK, a.Holds, err
			},
			release: func(ctx context.Context, rdb *redis.Client, expect int64, undoes uint64) (int64, error) {
				u, err := script.FairUnlock(ctx, rdb, fk, script.ReleaseArgs{Owner: owner, Lease: lease, Sharded: false, Expect: expect, GrantLease: time.Second, Mark: undoes}).Result()
				return u.Holds, err
			},
		},
	}
}

// TestGiveBackNamesItsAttempt: a give-back undoes the attempt it names
// only while no later attempt of the owner took or reported the hold, and
// an attempt that runs after a later one changes nothing. This is what
// keeps a give-back that Redis runs late from releasing the owner's next
// hold.
func TestGiveBackNamesItsAttempt(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock", "fairlock"} {
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
