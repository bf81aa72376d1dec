package fairlock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// backends runs f once on the shared standalone server and once on the
// shared 3-master cluster. newClient returns a fresh client of the backend,
// closed when the subtest ends.
func backends(t *testing.T, f func(t *testing.T, newClient func() redis.UniversalClient)) {
	t.Run("server", func(t *testing.T) {
		srv := redistest.SharedServer(t)
		f(t, func() redis.UniversalClient { return srv.NewClient(t) })
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		f(t, func() redis.UniversalClient { return c.NewClient(t) })
	})
}

func mustLock(t testing.TB, m *fairlock.Mutex) {
	t.Helper()
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustUnlock(t testing.TB, m *fairlock.Mutex) {
	t.Helper()
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// line returns the owner ids waiting in line, oldest first, and the
// members of the deadline zset.
func line(t testing.TB, rdb redis.UniversalClient, name string) (queue, deadlines []string) {
	t.Helper()
	n := keyspace.NewNames(name)
	ctx := context.Background()
	queue, err := rdb.LRange(ctx, n.Queue(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	deadlines, err = rdb.ZRange(ctx, n.Timeouts(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return queue, deadlines
}

// queueLen returns how many waiters are in line.
func queueLen(t testing.TB, rdb redis.UniversalClient, name string) int {
	q, _ := line(t, rdb, name)
	return len(q)
}

// assertNoKeys fails t if any key of the lock but its fencing counter is
// left in Redis, or the counter has no expiry.
func assertNoKeys(t testing.TB, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := context.Background()
	n := keyspace.NewNames(name)
	keys := redistest.Keys(t, rdb, n.Lock()+"*")
	for _, k := range keys {
		if k != n.Fence() {
			t.Fatalf("key %q left behind", k)
		}
		if rdb.PTTL(ctx, k).Val() == -1 {
			t.Fatalf("fencing counter %q left without an expiry", k)
		}
	}
}

// gate is a go-redis hook that, once shut, holds back every command of its
// client until it is opened again. Commands already past the gate when it
// shuts are counted, so a test can wait until they have all completed.
type gate struct {
	mu      sync.Mutex
	open    chan struct{} // nil while the gate is open
	running atomic.Int64  // commands past the gate and not yet completed
}

func (g *gate) shut() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

// shutAndDrain shuts the gate and waits until no command is in flight.
func (g *gate) shutAndDrain(t testing.TB) {
	g.shut()
	redistest.WaitFor(t, 5*time.Second, func() bool { return g.running.Load() == 0 })
}

func (g *gate) reopen() {
	g.mu.Lock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	g.mu.Unlock()
}

func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	if open == nil {
		g.running.Add(1)
	}
	g.mu.Unlock()
	if open == nil {
		return nil
	}
	select {
	case <-open:
		g.running.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			return err
		}
		defer g.running.Add(-1)
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			return err
		}
		defer g.running.Add(-1)
		return next(ctx, cmds)
	}
}

// commandCalls sums the calls of every command in INFO commandstats whose
// name passes keep.
func commandCalls(t testing.TB, rdb *redis.Client, keep func(cmd string) bool) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "cmdstat_"), ":calls=")
		if !ok || !keep(name) {
			continue
		}
		var n int64
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int64(c-'0')
		}
		total += n
	}
	return total
}

// queueUp makes each of waiters call Lock, each only once the one before
// has joined the line, so that the line is in the order of waiters. The
// channel receives a waiter's index when it gets the lock; it then holds
// the lock until the test unlocks it.
func queueUp(t testing.TB, admin redis.UniversalClient, name string, waiters []*fairlock.Mutex) <-chan int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got := make(chan int, len(waiters))
	for i, m := range waiters {
		go func() {
			if err := m.Lock(ctx); err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			got <- i
		}()
		redistest.WaitFor(t, 5*time.Second, func() bool { return queueLen(t, admin, name) == i+1 })
	}
	return got
}

// inTurn checks that the waiters of queueUp get the lock in line order,
// unlocking each in turn. It returns when the first one got the lock.
func inTurn(t testing.TB, got <-chan int, waiters []*fairlock.Mutex) (first time.Time) {
	t.Helper()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for turn := range waiters {
		timer.Reset(10 * time.Second)
		select {
		case i := <-got:
			if i != turn {
				t.Fatalf("waiter %d acquired in turn %d", i, turn)
			}
			if turn == 0 {
				first = time.Now()
			}
		case <-timer.C:
			t.Fatalf("waiter %d did not acquire in its turn", turn)
		}
		mustUnlock(t, waiters[turn])
	}
	return first
}

// handles returns n handles on the lock called name, each on a client of
// its own from newClient, with opts.
func handles(n int, newClient func() redis.UniversalClient, name string, opts ...fairlock.Option) []*fairlock.Mutex {
	ms := make([]*fairlock.Mutex, n)
	for i := range ms {
		ms[i] = fairlock.New(newClient(), name, opts...)
	}
	return ms
}
