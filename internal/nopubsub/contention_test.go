package nopubsub_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// mutex is what the contention tests need of a primitive.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// leased is a leased semaphore of one permit used as a mutex.
type leased struct {
	l  *semaphore.Leased
	id string
}

func (m *leased) Lock(ctx context.Context) (err error) {
	m.id, err = m.l.Acquire(ctx, 0)
	return err
}

func (m *leased) Unlock(ctx context.Context) error { return m.l.Release(ctx, m.id) }

// mutexes are the primitives of the acceptance test, each made on a
// client with default options.
var mutexes = []struct {
	name string
	make func(t *testing.T, rdb *redis.Client, name string) mutex
}{
	{"rlock", func(t *testing.T, rdb *redis.Client, name string) mutex { return rlock.New(rdb, name) }},
	{"fairlock", func(t *testing.T, rdb *redis.Client, name string) mutex { return fairlock.New(rdb, name) }},
	{"leased", func(t *testing.T, rdb *redis.Client, name string) mutex {
		l := semaphore.NewLeased(rdb, name)
		if _, err := l.TrySetPermits(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		return &leased{l: l}
	}},
}

// sectionsEach is how many critical sections each primitive serves: 300
// in all over the three.
const sectionsEach = 100

// TestContention has three processes contend for an rlock, a fairlock
// and a leased semaphore of one permit, with default options, where
// subscriptions are refused: the waiters find that out and poll; the 300
// critical sections complete, no two overlap, and no release fails. The
// processes count the sections and those inside at once on the server
// itself (see contendProcess).
func TestContention(t *testing.T) {
	deployments(t, func(t *testing.T, d deployment) {
		for _, p := range mutexes {
			t.Run(p.name, func(t *testing.T) {
				name := redistest.UniqueName(t)
				admin := redis.NewClient(&redis.Options{Addr: d.direct})
				defer admin.Close()
				if p.name == "leased" {
					p.make(t, admin, name) // one permit, set once
				}
				var helpers []*redistest.Helper
				for range 3 {
					args := append(d.reach.args(), d.direct, p.name, name, strconv.Itoa(sectionsEach))
					helpers = append(helpers, redistest.StartHelper(t, "contend", args...))
				}
				// All three start together: each is connected and has its
				// handle before any takes the lock.
				for _, h := range helpers {
					if line := h.Next(t, 30*time.Second); line != "ready" {
						t.Fatalf("a process: %q; stderr:\n%s", line, h.Stderr())
					}
				}
				for _, h := range helpers {
					if err := h.Send("go"); err != nil {
						t.Fatal(err)
					}
				}
				var each []string
				for _, h := range helpers {
					line := h.Next(t, 60*time.Second)
					if !strings.HasPrefix(line, "done ") {
						t.Errorf("a process: %q; stderr:\n%s", line, h.Stderr())
					}
					each = append(each, strings.TrimPrefix(line, "done "))
				}
				t.Logf("critical sections of each process: %v", each)
				counts := admin.MGet(t.Context(), name+":started", name+":overlaps").Val()
				if counts[1] != nil {
					t.Fatalf("%v critical sections overlapped another", counts[1])
				}
				if started, _ := strconv.Atoi(fmt.Sprint(counts[0])); started < sectionsEach {
					t.Fatalf("%d critical sections started, want %d", started, sectionsEach)
				}
				admin.Del(context.Background(), name+":started", name+":inside")
			})
		}
	})
}

// contendProcess is one process of TestContention: args are the deployment's
// reach, the server's own address, the primitive, the name and how many
// sections all processes serve together. It writes "ready", waits for a
// line, and then counts each section it starts, and each that found
// another inside, in keys of the server reached directly; it writes
// "done" and how many sections it served when the count is reached.
func contendProcess(ctx context.Context, args []string, in <-chan string) error {
	r, direct, kind, name := parseReach(args), args[4], args[5], args[6]
	sections, _ := strconv.ParseInt(args[7], 10, 64)
	rdb := r.dial()
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: direct})
	defer admin.Close()
	var m mutex
	switch kind {
	case "rlock":
		m = rlock.New(rdb, name)
	case "fairlock":
		m = fairlock.New(rdb, name)
	default:
		m = &leased{l: semaphore.NewLeased(rdb, name)}
	}
	ctx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()
	if err := admin.Ping(ctx).Err(); err != nil {
		return err
	}
	fmt.Println("ready")
	select {
	case <-in:
	case <-ctx.Done():
		return ctx.Err()
	}
	done := 0
	for admin.Incr(ctx, name+":started").Val() <= sections {
		done++
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if admin.Incr(ctx, name+":inside").Val() != 1 {
			admin.Incr(ctx, name+":overlaps")
		}
		admin.Decr(ctx, name+":inside")
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
	}
	fmt.Println("done", done)
	return ctx.Err()
}

// TestHandoffWithinTwoPolls checks that a waiter that polls holds within
// two poll intervals of the holder's release: the release grants it the
// lock (or frees the permit) in Redis, and its next ask, at most one
// jittered interval later, finds it so. The median of five handoffs is
// held to it; a single one may run late on a loaded machine, so each is
// only logged.
func TestHandoffWithinTwoPolls(t *testing.T) {
	deployments(t, func(t *testing.T, d deployment) {
		holderRDB, waiterRDB := d.client(t), d.client(t)
		traffic := redistest.CountTraffic(waiterRDB)
		for _, p := range mutexes {
			t.Run(p.name, func(t *testing.T) {
				ctx := bounded(t, 20*time.Second)
				name := redistest.UniqueName(t)
				holder, waiter := p.make(t, holderRDB, name), p.make(t, waiterRDB, name)
				var handoffs []time.Duration
				for range 5 {
					if err := holder.Lock(ctx); err != nil {
						t.Fatal(err)
					}
					asked := traffic.Commands()
					got := make(chan time.Time, 1)
					go func() {
						if err := waiter.Lock(ctx); err != nil {
							t.Error(err)
						}
						got <- time.Now()
					}()
					// Parked: it has asked Redis a few times and been refused.
					redistest.WaitFor(t, 5*time.Second, func() bool { return traffic.Commands() >= asked+3 })
					if err := holder.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					released := time.Now()
					handoffs = append(handoffs, (<-got).Sub(released))
					if err := waiter.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(handoffs)
				t.Logf("handoffs %v (poll interval %v)", handoffs, hub.PollInterval)
				if median := handoffs[len(handoffs)/2]; median > 2*hub.PollInterval {
					t.Fatalf("median handoff %v, want at most two poll intervals (%v)", median, 2*hub.PollInterval)
				}
			})
		}
	})
}
