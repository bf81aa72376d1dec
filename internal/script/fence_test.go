package script_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// fencedKind is one kind of hold that takes fencing tokens, as the fence
// tests drive it: a first acquisition by owner (held 0), or its retry
// after a lost reply (held 0 again, while it holds one level), and the
// release of owner's one level.
type fencedKind struct {
	acquire func(ctx context.Context, rdb *redis.Client, owner string) (ok bool, token uint64, err error)
	release func(ctx context.Context, rdb *redis.Client, owner string) error
}

const fenceLease = 10 * time.Second

func fencedKinds(name string) map[string]fencedKind {
	n := internal.NewNames(name)
	lk := lockKeys(name)
	fk := fairKeys(name)
	return map[string]fencedKind{
		"rlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				a, err := script.ReentrantTake(ctx, rdb, lk, script.TakeArgs{Owner: owner, Lease: fenceLease, Fencing: true, Holds: 0, Seq: 1, Deadline: redistest.InTime(), Placed: true}).Result()
				return a.OK, a.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.ReentrantUnlock(ctx, rdb, lk, script.ReleaseArgs{Owner: owner, Lease: fenceLease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
				return err
			},
		},
		"fairlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				a, err := script.FairTake(ctx, rdb, fk, script.FairTakeArgs{Owner: owner, Lease: fenceLease, Fencing: true, Holds: 0, Patience: 0, Sharded: false, GrantLease: time.Second, Seq: 1, Deadline: redistest.InTime()}).Result()
				return a.OK, a.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.FairUnlock(ctx, rdb, fk, script.ReleaseArgs{Owner: owner, Lease: fenceLease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
				return err
			},
		},
		"rwlock write": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				h, err := script.RWWriteTake(ctx, rdb, n.RWKeys(), script.RWWriteArgs{ID: owner + ":1", Lease: fenceLease, Fencing: true, Announce: false, Patience: time.Second, Deadline: redistest.InTime()}).Result()
				return h.OK, h.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.RWWriteUnlock(ctx, rdb, n.RWKeys(), script.ReleaseArgs{ID: owner + ":1", Lease: fenceLease, Sharded: false, Expect: 1}).Result()
				return err
			},
		},
	}
}

func fairKeys(name string) script.FairKeys {
	n := internal.NewNames(name)
	return script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place("")}
}

// A token is the larger of the counter + 1 and the server's clock in
// microseconds: it overtakes a counter an older release left, the hold
// records it (a retried first acquisition reports it even after the
// counter is lost), the counter keeps it for one lease, and a token taken
// after the counter is lost is still above it.
func TestFencingTokenRule(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock", "fairlock", "rwlock write"} {
			t.Run(kind, func(t *testing.T) {
				ctx := t.Context()
				n := internal.NewNames(redistest.UniqueName(t))
				k := fencedKinds(n.Name)[kind]
				rdb.Set(ctx, n.Fence(), 57, 0) // an older release's counter, which never expires
				now := rdb.Time(ctx).Val()
				ok, first, err := k.acquire(ctx, rdb, "a")
				if err != nil || !ok || first <= 57 || first < uint64(now.UnixMicro()) {
					t.Fatalf("first acquisition = %v, %d, %v; want a token above 57 and the clock %d", ok, first, err, now.UnixMicro())
				}
				digits := strconv.FormatUint(first, 10)
				if got := rdb.HGet(ctx, n.Lock(), "@token").Val(); got != digits {
					t.Fatalf("the hold records token %q, want %s", got, digits)
				}
				if got := rdb.Get(ctx, n.Fence()).Val(); got != digits {
					t.Fatalf("counter %q, want the token %s", got, digits)
				}
				if ttl := rdb.PTTL(ctx, n.Fence()).Val(); ttl <= 0 || ttl > fenceLease {
					t.Fatalf("counter's expiry %v, want a lease (%v) at most", ttl, fenceLease)
				}
				rdb.Del(ctx, n.Fence()) // the counter lost while the hold lasts
				if ok, again, err := k.acquire(ctx, rdb, "a"); err != nil || !ok || again != first {
					t.Fatalf("retried first acquisition = %v, %d, %v; want the hold's token %d", ok, again, err, first)
				}
				if err := k.release(ctx, rdb, "a"); err != nil {
					t.Fatal(err)
				}
				rdb.Del(ctx, n.Fence())
				if ok, next, err := k.acquire(ctx, rdb, "b"); err != nil || !ok || next <= first {
					t.Fatalf("acquisition after the counter was lost = %v, %d, %v; want a token above %d", ok, next, err, first)
				}
				if err := k.release(ctx, rdb, "b"); err != nil {
					t.Fatal(err)
				}
				if n, err := rdb.Exists(ctx, n.Lock()).Result(); err != nil || n != 0 {
					t.Fatalf("lock left after the release: %d, %v", n, err)
				}
			})
		}
	})
}

// taking is an attempt by owner "a" of a fenced kind, believing it holds
// holds levels, with attempt mark mark, fencing "2" when anew is set and
// "1" otherwise; it reports whether "a" holds the lock, its levels and
// the token.
type taking func(ctx context.Context, rdb *redis.Client, name string, holds int64, mark uint64, anew bool) (bool, int64, uint64, error)

var anewKinds = map[string]taking{
	"rlock": func(ctx context.Context, rdb *redis.Client, name string, holds int64, mark uint64, anew bool) (bool, int64, uint64, error) {
		a, err := script.ReentrantTake(ctx, rdb, lockKeys(name), script.TakeArgs{
			Owner: "a", Lease: fenceLease, Fencing: true, Holds: holds,
			Seq: mark, Deadline: redistest.InTime(), Anew: anew,
		}).Result()
		return a.OK, a.Holds, a.Token, err
	},
	"fairlock": func(ctx context.Context, rdb *redis.Client, name string, holds int64, mark uint64, anew bool) (bool, int64, uint64, error) {
		a, err := script.FairTake(ctx, rdb, fairKeys(name), script.FairTakeArgs{
			Owner: "a", Lease: fenceLease, Fencing: true, Holds: holds, GrantLease: time.Second,
			Seq: mark, Deadline: redistest.InTime(), Anew: anew,
		}).Result()
		return a.OK, a.Holds, a.Token, err
	},
}

// A handle that gave its hold up (fencing "2") and finds it standing,
// taken by an earlier attempt, adopts it with a new token above the one
// it recorded, whatever its count; a resend of that attempt reports the
// new token. Without "2", the hold found reports the token it recorded
// (a resend after a lost reply).
func TestFencedAnewAdoption(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock", "fairlock"} {
			t.Run(kind, func(t *testing.T) {
				ctx := t.Context()
				take := anewKinds[kind]
				// first takes a hold with attempt 1, and returns its name
				// and token. (A hold has one level in Redis: re-entry is
				// counted in the process.)
				first := func() (string, uint64) {
					name := redistest.UniqueName(t)
					ok, holds, token, err := take(ctx, rdb, name, 0, 1, false)
					if err != nil || !ok || holds != 1 || token == 0 {
						t.Fatalf("first acquisition = %v, %d, %d, %v; want one level and a token", ok, holds, token, err)
					}
					return name, token
				}

				name, recorded := first()
				ok, holds, adopted, err := take(ctx, rdb, name, 0, 2, true)
				if err != nil || !ok || holds != 1 || adopted <= recorded {
					t.Fatalf("adoption anew = %v, %d, %d, %v; want one level and a token above %d", ok, holds, adopted, err, recorded)
				}
				if ok, holds, again, err := take(ctx, rdb, name, 0, 2, true); err != nil || !ok || holds != 1 || again != adopted {
					t.Fatalf("resent adoption = %v, %d, %d, %v; want one level and the same token %d", ok, holds, again, err, adopted)
				}

				name, recorded = first()
				if ok, holds, token, err := take(ctx, rdb, name, 0, 2, false); err != nil || !ok || holds != 1 || token != recorded {
					t.Fatalf("adoption without anew = %v, %d, %d, %v; want one level and the recorded token %d", ok, holds, token, err, recorded)
				}

			})
		}
	})
}

// A release that grants the lock to a waiter with fencing takes a token
// above the releaser's, records it with the grantee's hold and publishes
// it whole ("g" .. digits .. ":" .. mark), where Lua's tostring would
// round a 16-digit number to 14 and print it with an exponent.
func TestGrantPublishesWholeToken(t *testing.T) {
	type granting struct {
		wait    func(ctx context.Context, rdb *redis.Client, name string) (script.Acquired, error)
		release func(ctx context.Context, rdb *redis.Client, name string) (script.Unlocked, error)
	}
	kinds := map[string]granting{
		"rlock": {
			wait: func(ctx context.Context, rdb *redis.Client, name string) (script.Acquired, error) {
				return script.ReentrantTake(ctx, rdb, lockKeys(name), script.TakeArgs{Owner: "b", Lease: fenceLease, Fencing: true, Holds: 0, Patience: time.Minute, Seq: 7, Deadline: redistest.InTime(), Placed: true}).Result()
			},
			release: func(ctx context.Context, rdb *redis.Client, name string) (script.Unlocked, error) {
				return script.ReentrantUnlock(ctx, rdb, lockKeys(name), script.ReleaseArgs{Owner: "a", Lease: fenceLease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
			},
		},
		"fairlock": {
			wait: func(ctx context.Context, rdb *redis.Client, name string) (script.Acquired, error) {
				return script.FairTake(ctx, rdb, fairKeys(name), script.FairTakeArgs{Owner: "b", Lease: fenceLease, Fencing: true, Holds: 0, Patience: time.Minute, Sharded: false, GrantLease: time.Second, Seq: 7, Deadline: redistest.InTime()}).Result()
			},
			release: func(ctx context.Context, rdb *redis.Client, name string) (script.Unlocked, error) {
				return script.FairUnlock(ctx, rdb, fairKeys(name), script.ReleaseArgs{Owner: "a", Lease: fenceLease, Sharded: false, Expect: 1, GrantLease: time.Second, Mark: 0}).Result()
			},
		},
	}
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock", "fairlock"} {
			t.Run(kind, func(t *testing.T) {
				ctx := t.Context()
				n := internal.NewNames(redistest.UniqueName(t))
				g := kinds[kind]
				ok, first, err := fencedKinds(n.Name)[kind].acquire(ctx, rdb, "a")
				if err != nil || !ok {
					t.Fatalf("a's acquisition = %v, %v", ok, err)
				}
				if w, err := g.wait(ctx, rdb, n.Name); err != nil || w.OK {
					t.Fatalf("b's waiting attempt = %+v, %v; want a place in line", w, err)
				}
				sub := rdb.Subscribe(ctx, n.WaiterChannel("b"))
				defer sub.Close()
				if _, err := sub.Receive(ctx); err != nil {
					t.Fatal(err)
				}
				u, err := g.release(ctx, rdb, n.Name)
				if err != nil || u.Grantee != "b" || u.Token <= first {
					t.Fatalf("a's release = %+v, %v; want a grant to b with a token above %d", u, err, first)
				}
				digits := strconv.FormatUint(u.Token, 10)
				msg, err := sub.ReceiveMessage(ctx)
				if err != nil || msg.Payload != "g"+digits+":7" {
					t.Fatalf("grant message %v, %v; want g%s:7", msg, err, digits)
				}
				if got := rdb.HGet(ctx, n.Lock(), "@token").Val(); got != digits {
					t.Fatalf("the grantee's hold records token %q, want %s", got, digits)
				}
			})
		}
	})
}
