package script_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
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
	n := keyspace.NewNames(name)
	lk := lockKeys(name)
	fk := fairKeys(name)
	return map[string]fencedKind{
		"rlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				a, err := script.ReentrantTake(ctx, rdb, lk, script.TakeArgs{ID: owner + ":1", Lease: fenceLease, Fencing: true, Deadline: redistest.InTime(), Placed: true}).Result()
				return a.OK, a.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.ReentrantUnlock(ctx, rdb, lk, script.ReleaseArgs{ID: owner + ":1", Lease: fenceLease, GrantLease: time.Second}).Result()
				return err
			},
		},
		"fairlock": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				a, err := script.FairTake(ctx, rdb, fk, script.FairTakeArgs{ID: owner + ":1", Lease: fenceLease, Fencing: true, Patience: 0, Sharded: false, GrantLease: time.Second, Deadline: redistest.InTime()}).Result()
				return a.OK, a.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.FairUnlock(ctx, rdb, fk, script.ReleaseArgs{ID: owner + ":1", Lease: fenceLease, Sharded: false, GrantLease: time.Second}).Result()
				return err
			},
		},
		"rwlock write": {
			acquire: func(ctx context.Context, rdb *redis.Client, owner string) (bool, uint64, error) {
				h, err := script.RWWriteTake(ctx, rdb, n.RWKeys(), script.RWWriteArgs{ID: owner + ":1", Lease: fenceLease, Fencing: true, Announce: false, Patience: time.Second, Deadline: redistest.InTime()}).Result()
				return h.OK, h.Token, err
			},
			release: func(ctx context.Context, rdb *redis.Client, owner string) error {
				_, err := script.RWWriteUnlock(ctx, rdb, n.RWKeys(), script.ReleaseArgs{ID: owner + ":1", Lease: fenceLease, Sharded: false}).Result()
				return err
			},
		},
	}
}

func fairKeys(name string) script.FairKeys {
	n := keyspace.NewNames(name)
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
				n := keyspace.NewNames(redistest.UniqueName(t))
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

// A release that grants the lock to a waiter with fencing takes a token
// above the releaser's, records it with the grantee's hold and publishes
// it whole ("h" .. digits .. ":" .. hold id), where Lua's tostring would
// round a 16-digit number to 14 and print it with an exponent.
func TestGrantPublishesWholeToken(t *testing.T) {
	type granting struct {
		wait    func(ctx context.Context, rdb *redis.Client, name string) (script.Acquired, error)
		release func(ctx context.Context, rdb *redis.Client, name string) (script.Unlocked, error)
	}
	kinds := map[string]granting{
		"rlock": {
			wait: func(ctx context.Context, rdb *redis.Client, name string) (script.Acquired, error) {
				return script.ReentrantTake(ctx, rdb, lockKeys(name), script.TakeArgs{ID: "b:7", Lease: fenceLease, Fencing: true, Patience: time.Minute, Deadline: redistest.InTime(), Placed: true}).Result()
			},
			release: func(ctx context.Context, rdb *redis.Client, name string) (script.Unlocked, error) {
				return script.ReentrantUnlock(ctx, rdb, lockKeys(name), script.ReleaseArgs{ID: "a:1", Lease: fenceLease, GrantLease: time.Second}).Result()
			},
		},
	}
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		for _, kind := range []string{"rlock"} { // fairlock: TestFairGrantNamesHoldID
			t.Run(kind, func(t *testing.T) {
				ctx := t.Context()
				n := keyspace.NewNames(redistest.UniqueName(t))
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
				if err != nil || u.Grantee != "b:7" || u.Token <= first {
					t.Fatalf("a's release = %+v, %v; want a grant to b:7 with a token above %d", u, err, first)
				}
				digits := strconv.FormatUint(u.Token, 10)
				msg, err := sub.ReceiveMessage(ctx)
				if err != nil || msg.Payload != "h"+digits+":b:7#0" {
					t.Fatalf("grant message %v, %v; want h%s:b:7#0", msg, err, digits)
				}
				if got := rdb.HGet(ctx, n.Lock(), "@token").Val(); got != digits {
					t.Fatalf("the grantee's hold records token %q, want %s", got, digits)
				}
			})
		}
	})
}

// A token taken from the clock is written as the clock's seconds and its
// microseconds padded to six digits: a clock early in its second gives
// the same digits as the token's number (miniredis, whose clock a test
// sets).
func TestTokenDigitsEarlyInASecond(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	for _, micros := range []int{0, 7, 4321, 99999, 999999} {
		now := time.Now().Truncate(time.Second).Add(time.Duration(micros) * time.Microsecond)
		mr.SetTime(now)
		n := keyspace.NewNames(redistest.UniqueName(t))
		for kind, k := range fencedKinds(n.Name) {
			ok, token, err := k.acquire(t.Context(), rdb, "a")
			if err != nil || !ok || token != uint64(now.UnixMicro()) {
				t.Fatalf("%s at %dµs: acquisition = %v, %d, %v; want the clock's token %d", kind, micros, ok, token, err, now.UnixMicro())
			}
			digits := strconv.FormatInt(now.UnixMicro(), 10)
			if got := rdb.HGet(t.Context(), n.Lock(), "@token").Val(); got != digits {
				t.Fatalf("%s at %dµs: the hold records token %q, want %s", kind, micros, got, digits)
			}
			if err := k.release(t.Context(), rdb, "a"); err != nil {
				t.Fatal(err)
			}
			rdb.Del(t.Context(), n.Fence(), n.Lock(), n.Sub("writers"), n.Sub("readers"))
		}
	}
}
