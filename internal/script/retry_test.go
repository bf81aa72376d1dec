package script_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// A retried acquire (the caller believes it holds fewer levels than it
// does: the first reply was lost) adds no hold but re-arms the lease: the
// caller counts the hold's validity from the retry, so Redis must not
// expire it earlier.
func TestRetriedAcquireRearmsLease(t *testing.T) {
	const lease = 10 * time.Second
	for _, tc := range []struct {
		name    string
		acquire func(t *testing.T, rdb *redis.Client, name string) script.Acquired
	}{
		{"rlock", func(t *testing.T, rdb *redis.Client, name string) script.Acquired {
			res, err := script.ReentrantTake(t.Context(), rdb, lockKeys(name), script.TakeArgs{ID: "a:1", Lease: lease, Deadline: redistest.InTime(), Placed: true}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
		{"fairlock", func(t *testing.T, rdb *redis.Client, name string) script.Acquired {
			n := keyspace.NewNames(name)
			k := script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place("")}
			res, err := script.FairTake(t.Context(), rdb, k, script.FairTakeArgs{ID: "a:1", Lease: lease, Fencing: false, Patience: time.Second, Sharded: false, GrantLease: time.Second, Deadline: redistest.InTime()}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tiers(t, func(t *testing.T, rdb *redis.Client) {
				name := redistest.UniqueName(t)
				key := keyspace.NewNames(name).Lock()
				if res := tc.acquire(t, rdb, name); !res.OK || res.Holds != 1 {
					t.Fatalf("acquire = %+v", res)
				}
				rdb.PExpire(t.Context(), key, time.Second) // the lost run was long ago
				if res := tc.acquire(t, rdb, name); !res.OK || res.Holds != 1 {
					t.Fatalf("retried acquire = %+v, want the one hold", res)
				}
				if d := rdb.PTTL(t.Context(), key).Val(); d < lease-time.Second {
					t.Fatalf("lease after the retried acquire %v, want it re-armed to %v", d, lease)
				}
			})
		})
	}
}

func TestRetriedLeasedAcquireRearmsLease(t *testing.T) {
	const lease = 10 * time.Second
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		n := keyspace.NewNames(redistest.UniqueName(t))
		k := script.LeasedKeys{Leases: n.Lock(), Permits: n.Sub("permits"), Channel: n.Channel()}
		rdb.Set(t.Context(), k.Permits, 1, 0)
		acquire := func() {
			t.Helper()
			res, err := script.LeasedAcquire(t.Context(), rdb, k, "id", lease, false, time.Now().Add(exactly.RequestWindow).UnixMilli()).Result()
			if err != nil || !res.OK {
				t.Fatalf("acquire = %+v, %v", res, err)
			}
		}
		acquire()
		first := rdb.ZScore(t.Context(), k.Leases, "id").Val()
		rdb.ZAdd(t.Context(), k.Leases, redis.Z{Score: first - float64((lease - time.Second).Milliseconds()), Member: "id"})
		acquire() // the retry of a request whose reply was lost
		if got := rdb.ZScore(t.Context(), k.Leases, "id").Val(); got < first-float64(time.Second.Milliseconds()) {
			t.Fatalf("expiry after the retried acquire %.0f, want re-armed to about %.0f", got, first)
		}
		if avail, _ := script.LeasedAvailable(t.Context(), rdb, k, false).Result(); avail != 0 {
			t.Fatalf("available %d after a retried acquire of the one permit, want 0", avail)
		}
	})
}
