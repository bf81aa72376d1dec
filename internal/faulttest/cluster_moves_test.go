package faulttest_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyslot"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// movesLease is the holder's fixed lease in the slot-move tests: a waiter
// served by it instead of a wake-up would take 20s, far past the 1s bound.
const movesLease = 20 * time.Second

// moveLock is what the slot-move tests need of a lock.
type moveLock interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}

var moveKinds = []struct {
	kind string
	new  func(rdb redis.UniversalClient, name string) moveLock
}{
	{"rlock", func(rdb redis.UniversalClient, name string) moveLock {
		return rlock.New(rdb, name, rlock.WithLeaseTime(movesLease))
	}},
	{"fairlock", func(rdb redis.UniversalClient, name string) moveLock {
		return fairlock.New(rdb, name, fairlock.WithLeaseTime(movesLease))
	}},
	{"election", func(rdb redis.UniversalClient, name string) moveLock {
		return candidate{election.New(rdb, name, election.WithWatchdogTimeout(movesLease))}
	}},
}

// candidate is an election's campaign and resignation as a lock: parked
// candidates are waiters in the leadership's line.
type candidate struct{ e *election.Election }

func (c candidate) Lock(ctx context.Context) error   { return c.e.Campaign(ctx, "candidate") }
func (c candidate) Unlock(ctx context.Context) error { return c.e.Resign(ctx) }

// moveCase parks waiters on a held lock, moves its slot with move (which
// returns once the move is complete), parks one more waiter from a client
// whose slot map predates the move, releases, and checks that every waiter
// holds within a second of the release.
func moveCase(t *testing.T, c *redistest.Cluster, newLock func(redis.UniversalClient, string) moveLock, move func(slot int, owner *redistest.Server)) {
	name := redistest.UniqueName(t)
	key := keyspace.NewNames(name).Lock()
	// rlock waiters listen on the lock's channel, fairlock waiters each on
	// a channel of their own under it.
	channels := keyspace.NewNames(name).Channel()
	slot := keyslot.Of(key)
	holderRDB, early1, early2, stale := c.NewClient(t), c.NewClient(t), c.NewClient(t), c.NewClient(t)
	holder := newLock(holderRDB, name)
	if err := holder.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The stale client learns the slot map now, before the move.
	if err := stale.Exists(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), movesLease/2)
	var mu sync.Mutex
	held := make(map[string]time.Time)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	waiter := func(label string, rdb redis.UniversalClient) {
		wg.Go(func() {
			l := newLock(rdb, name)
			if err := l.Lock(ctx); err != nil {
				t.Errorf("%s: Lock: %v", label, err)
				return
			}
			mu.Lock()
			held[label] = time.Now()
			mu.Unlock()
			if err := l.Unlock(context.Background()); err != nil {
				t.Errorf("%s: Unlock: %v", label, err)
			}
		})
	}
	owner := c.MasterFor(key)
	parked := func(s *redistest.Server, n int64) func() bool {
		admin := s.NewClient(t)
		return func() bool {
			var subs int64
			for _, ch := range redistest.ShardChannels(t, s) {
				if strings.HasPrefix(ch, channels) {
					subs += redistest.ShardNumSub(t, admin, ch)
				}
			}
			return subs >= n
		}
	}
	waiter("early-1", early1)
	waiter("early-2", early2)
	redistest.WaitFor(t, 5*time.Second, parked(owner, 2))

	move(slot, owner)
	newOwner := c.MasterFor(key)
	if newOwner == owner {
		t.Fatalf("slot %d still on %s after the move", slot, owner.Addr())
	}
	waiter("stale-map", stale)
	waiter("late", early1)
	// Every waiting client listens on the new owner before the release.
	redistest.WaitFor(t, 5*time.Second, parked(newOwner, 3))

	released := time.Now()
	if err := holder.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, label := range []string{"early-1", "early-2", "stale-map", "late"} {
		at, ok := held[label]
		switch {
		case !ok:
			t.Errorf("%s never held the lock", label)
		case at.Sub(released) > time.Second:
			t.Errorf("%s held the lock %v after the release, want within 1s", label, at.Sub(released).Round(time.Millisecond))
		}
	}
}

// A slot migrated (as redis-cli --cluster reshard does) under parked
// waiters: they follow it to the new owner and are woken by the release
// there, as are a waiter arriving after the move and one whose client's
// slot map is stale. Five repetitions per lock type.
func TestClusterWaitersFollowSlotMigration(t *testing.T) {
	c := redistest.StartCluster(t)
	for _, k := range moveKinds {
		t.Run(k.kind, func(t *testing.T) {
			for rep := range 5 {
				t.Run(fmt.Sprint(rep), func(t *testing.T) {
					moveCase(t, c, k.new, func(slot int, owner *redistest.Server) {
						var to *redistest.Server
						for _, s := range c.Nodes() {
							if s != owner {
								to = s
								break
							}
						}
						c.MigrateSlot(t, slot, to)
					})
				})
			}
		})
	}
}

// A primary with parked waiters fails over to its replica (CLUSTER
// FAILOVER): the waiters follow the new primary and are woken by the
// release there.
func TestClusterWaitersFollowFailover(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t)
	for _, k := range moveKinds {
		t.Run(k.kind, func(t *testing.T) {
			moveCase(t, c, k.new, func(_ int, owner *redistest.Server) {
				c.Failover(t, owner)
			})
		})
	}
}

// refusalHook signals refused when a command of its client fails with a
// reply starting with prefix.
type refusalHook struct {
	prefix  string
	refused chan struct{}
}

func (h refusalHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h refusalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), h.prefix) {
			select {
			case h.refused <- struct{}{}:
			default:
			}
		}
		return err
	}
}

func (h refusalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A release while the lock's slot migrates, its keys moving one by one
// (here the waiter's place in line has moved ahead of the lock), is refused
// with TRYAGAIN and changes nothing: the holder still holds, the waiter is
// still in line. Unlock resends it, and once the slot has moved the
// release goes through and grants the lock to the waiter.
func TestClusterReleaseWithWaiterPlaceMovedAhead(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	n := keyspace.NewNames(name)
	slot := keyslot.Of(n.Lock())
	src := c.MasterFor(n.Lock())
	var dst *redistest.Server
	for _, s := range c.Masters(t) {
		if s != src {
			dst = s
			break
		}
	}
	hook := refusalHook{prefix: "TRYAGAIN", refused: make(chan struct{}, 1)}
	holderRDB := c.NewClient(t)
	holderRDB.AddHook(hook)
	holder := rlock.New(holderRDB, name, rlock.WithLeaseTime(movesLease))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := rlock.New(c.NewClient(t), name)
	waited := make(chan error, 1)
	go func() { waited <- waiter.Lock(ctx) }()
	admin := src.NewClient(t)
	var line []string
	redistest.WaitFor(t, 5*time.Second, func() bool {
		line = admin.LRange(ctx, n.Queue(), 0, -1).Val()
		return len(line) == 1
	})
	holders := admin.HGetAll(ctx, n.Lock()).Val()

	m := c.BeginMigration(t, slot, dst)
	if err := admin.Migrate(ctx, "127.0.0.1", fmt.Sprint(dst.Port()), n.Place(line[0]), 0, 5*time.Second).Err(); err != nil {
		t.Fatalf("MIGRATE of the waiter's place: %v", err)
	}
	unlocked := make(chan error, 1)
	go func() { unlocked <- holder.Unlock(ctx) }()
	select {
	case <-hook.refused:
	case err := <-unlocked:
		t.Fatalf("Unlock returned %v before the slot moved, want it refused and resent", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the release was not refused")
	}
	if got := admin.HGetAll(ctx, n.Lock()).Val(); !maps.Equal(got, holders) {
		t.Fatalf("lock hash after the refused release = %v, want %v", got, holders)
	}
	if got := admin.LRange(ctx, n.Queue(), 0, -1).Val(); !slices.Equal(got, line) {
		t.Fatalf("line after the refused release = %v, want %v", got, line)
	}
	m.Finish(t)
	if err := <-unlocked; err != nil {
		t.Fatalf("Unlock after the slot moved: %v", err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("waiter's Lock: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not hold within 5s of the release")
	}
	got := redistest.Holders(ctx, dst.NewClient(t), n.Lock())
	if len(got) != 1 || redistest.HeldBy(ctx, dst.NewClient(t), n.Lock(), line[0]) != "1" {
		t.Fatalf("lock hash after the release = %v, want the waiter %s alone", got, line[0])
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
