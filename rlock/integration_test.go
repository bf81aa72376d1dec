package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/rlock"
)

// Integration tier: a real redis-server started by the tests.

// counterRun makes workers goroutines on each of the clients take the lock
// iters times and do an unprotected read-modify-write of a Redis counter.
// Without mutual exclusion increments are lost. With shared, the workers
// of a client share one handle, as goroutines of a process share one
// (its holds then pass between them locally, see rlock's doc); else each
// has its own.
func counterRun(t *testing.T, clients []redis.UniversalClient, name string, workers, iters int, shared bool, opts ...rlock.Option) {
	t.Helper()
	ctx := t.Context()
	counter := "counter:{" + name + "}"
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*workers)
	for _, rdb := range clients {
		m := rlock.New(rdb, name, opts...)
		for range workers {
			wg.Go(func() {
				m := m
				if !shared {
					m = rlock.New(rdb, name, opts...)
				}
				for range iters {
					if err := m.Lock(ctx); err != nil {
						errs <- err
						return
					}
					n, err := rdb.Get(ctx, counter).Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						errs <- err
						return
					}
					if err := rdb.Set(ctx, counter, n+1, 0).Err(); err != nil {
						errs <- err
						return
					}
					if err := m.Unlock(ctx); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := clients[0].Get(ctx, counter).Int()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(clients) * workers * iters; got != want {
		t.Fatalf("counter = %d, want %d: mutual exclusion violated", got, want)
	}
	clients[0].Del(ctx, counter)
}

func TestMutualExclusion(t *testing.T) {
	srv := redistest.SharedServer(t)
	var clients []redis.UniversalClient
	for range 8 {
		clients = append(clients, srv.NewClient(t))
	}
	for _, shared := range []bool{false, true} {
		name := redistest.UniqueName(t)
		counterRun(t, clients, name, 8, 50, shared)
		assertNoKeys(t, clients[0], name)
	}
}

func TestReentrancy(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	a, b := rlock.New(rdb, name), rlock.New(rdb, name)
	err := a.Do(t.Context(), func(ctx context.Context) error {
		if err := a.Lock(ctx); err != nil { // re-entry through the hold's ctx
			return err
		}
		if n, err := a.HoldCount(ctx); n != 2 || err != nil {
			t.Fatalf("HoldCount = %d, %v; want 2", n, err)
		}
		if err := a.Unlock(ctx); err != nil {
			return err
		}
		if ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("TryLock by other handle = %v, %v while held once", ok, err)
		}
		if err := b.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
			t.Fatalf("non-holder Unlock = %v, want ErrNotHeld", err)
		}
		if err := a.Unlock(t.Context()); !errors.Is(err, rlock.ErrNotHeld) {
			t.Fatalf("a plain Unlock of Do's hold = %v, want ErrNotHeld", err)
		}
		if n, _ := a.HoldCount(ctx); n != 1 {
			t.Fatalf("non-holder Unlock changed HoldCount to %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := a.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after release = %v, want ErrNotHeld", err)
	}
	if locked, _ := a.IsLocked(ctx); locked {
		t.Fatal("still locked after the last Unlock")
	}
	assertNoKeys(t, rdb, name)
}

func TestLeaseTime(t *testing.T) {
	srv := redistest.SharedServer(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	a := rlock.New(srv.NewClient(t), name, rlock.WithLeaseTime(time.Second))
	b := rlock.New(srv.NewClient(t), name)
	start := time.Now()
	mustLock(t, a)
	mustLock(t, b)
	if d := time.Since(start); d < 900*time.Millisecond || d > 2500*time.Millisecond {
		t.Fatalf("second handle acquired after %v, want about 1s", d)
	}
	select {
	case <-a.Done():
	case <-time.After(time.Second):
		t.Fatal("expired holder's Done did not close")
	}
	if err := a.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) {
		t.Fatalf("Unlock after lease expiry = %v, want ErrNotHeld", err)
	}
	if held, _ := b.IsHeld(ctx); !held {
		t.Fatal("stale Unlock released the new holder")
	}
	mustUnlock(t, b)

	// Re-entry re-arms the fixed lease, not the watchdog timeout.
	c := rlock.New(srv.NewClient(t), name, rlock.WithLeaseTime(2*time.Second))
	err := c.Do(ctx, func(ctx context.Context) error {
		redistest.WaitFor(t, 3*time.Second, func() bool { ttl, _ := c.TTL(ctx); return ttl < 1200*time.Millisecond })
		if err := c.Lock(ctx); err != nil {
			return err
		}
		if ttl, _ := c.TTL(ctx); ttl < 1500*time.Millisecond || ttl > 2*time.Second {
			t.Fatalf("TTL after re-entry = %v, want the 2s lease re-armed", ttl)
		}
		return c.Unlock(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchdog(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	m := rlock.New(rdb, name, rlock.WithWatchdogTimeout(time.Second))
	mustLock(t, m)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ttl, err := m.TTL(ctx)
		if err != nil || ttl <= 0 {
			t.Fatalf("TTL = %v, %v while held by the watchdog", ttl, err)
		}
	}
	select {
	case <-m.Done():
		t.Fatal("Done closed while the watchdog kept the hold")
	default:
	}
	mustUnlock(t, m)
	if n := rdb.Exists(ctx, keyspace.NewNames(name).Lock()).Val(); n != 0 {
		t.Fatal("lock key still exists after Unlock")
	}
	// Nothing renews after Unlock: no goroutine, no script calls.
	redistest.VerifyNone(t, goleak.IgnoreCurrent())
	before := evalCalls(t, rdb)
	time.Sleep(700 * time.Millisecond) // two renewal periods of silence
	if after := evalCalls(t, rdb); after != before {
		t.Fatalf("%d script calls after Unlock, want none", after-before)
	}
}

func TestWatchdogCrashedHolder(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	holderClient := srv.NewClient(t)
	holder := rlock.New(holderClient, name, rlock.WithWatchdogTimeout(time.Second))
	mustLock(t, holder)
	waiter := rlock.New(srv.NewClient(t), name)
	holderClient.Close() // the process "dies": no Unlock, no renewals
	start := time.Now()
	mustLock(t, waiter)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("waiter acquired %v after the holder died, want within 2s", d)
	}
	<-holder.Done()
	mustUnlock(t, waiter)
}

func TestLossClosesDone(t *testing.T) {
	srv := redistest.SharedServer(t)
	ctx := t.Context()
	for _, how := range []string{"force unlock", "delete key"} {
		t.Run(how, func(t *testing.T) {
			name := redistest.UniqueName(t)
			var lost atomic.Int32
			holder := rlock.New(srv.NewClient(t), name, rlock.WithWatchdogTimeout(time.Second),
				rlock.WithOnLost(func(err error) {
					if !errors.Is(err, rlock.ErrLost) {
						t.Errorf("loss hook error %v does not match ErrLost", err)
					}
					lost.Add(1)
				}))
			mustLock(t, holder)
			other := srv.NewClient(t)
			start := time.Now()
			if how == "force unlock" {
				if ok, err := rlock.New(other, name).ForceUnlock(ctx); !ok || err != nil {
					t.Fatalf("ForceUnlock = %v, %v", ok, err)
				}
			} else {
				other.Del(ctx, keyspace.NewNames(name).Lock())
			}
			select {
			case <-holder.Done():
			case <-time.After(2 * time.Second):
				t.Fatal("holder's Done did not close after the lock was removed")
			}
			if d := time.Since(start); d > 700*time.Millisecond {
				t.Fatalf("Done closed %v after the loss, want within a renewal period (333ms)", d)
			}
			redistest.WaitFor(t, time.Second, func() bool { return lost.Load() == 1 })
			time.Sleep(400 * time.Millisecond)
			if n := lost.Load(); n != 1 {
				t.Fatalf("loss hook called %d times, want once", n)
			}
		})
	}
}

// A holder's re-entry (through its hold's ctx) does not queue behind the
// waiters parked in its process: it succeeds at once.
func TestReentryDoesNotQueue(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	name := redistest.UniqueName(t)
	holder, waiter := rlock.New(rdb, name), rlock.New(rdb, name)
	waited := make(chan error, 1)
	err := holder.Do(t.Context(), func(ctx context.Context) error {
		base := evalCalls(t, rdb)
		go func() { waited <- waiter.Lock(t.Context()) }()
		// Parked: an attempt, then subscribed.
		redistest.WaitFor(t, 2*time.Second, func() bool { return evalCalls(t, rdb)-base >= 1 })
		waitSubscribed(t, srv.NewClient(t), name, 1)
		reentered := make(chan error, 1)
		go func() { reentered <- holder.Lock(ctx) }()
		select {
		case err := <-reentered:
			if err != nil {
				return err
			}
		case <-time.After(2 * time.Second):
			t.Fatal("the holder's re-entry waited behind the parked waiter")
		}
		return holder.Unlock(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, waiter)
}

func TestWaiterWokenByUnlock(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	waiterClient := srv.NewClient(t)
	wakes := redistest.CountParks(t, waiterClient)
	got := make(chan time.Time, 1)
	waiter := rlock.New(waiterClient, name)
	go func() {
		if err := waiter.Lock(t.Context()); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	// Parked, not only subscribed: between its SUBSCRIBE and its park the
	// waiter checks the lock (HKEYS), and a release before that check
	// has it attempt and take its grant without a wake.
	redistest.WaitFor(t, 5*time.Second, func() bool { return wakes.N() == 1 })
	start := time.Now()
	mustUnlock(t, holder)
	at := <-got
	mustUnlock(t, waiter)
	// Without the notification the waiter would sleep until the keeper,
	// refreshing its place about every second, found the lock free.
	if n, other := wakes.Notified(), wakes.Unnotified(); n != 1 || other != 0 {
		t.Fatalf("the waiter woke %d times notified and %d otherwise, want once, notified", n, other)
	}
	d := at.Sub(start)
	t.Logf("waiter acquired %v after Unlock", d)
	if d > time.Second {
		t.Fatalf("waiter acquired %v after Unlock, want within a second", d)
	}
}

func TestWaiterSurvivesPubSubKill(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name, rlock.WithLeaseTime(2*time.Second))
	mustLock(t, holder)
	start := time.Now()
	done := make(chan error, 1)
	waiter := rlock.New(srv.NewClient(t), name)
	go func() { done <- waiter.Lock(t.Context()) }()
	waitSubscribed(t, admin, name, 1)
	if err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, holder)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		mustUnlock(t, waiter)
	case <-time.After(4 * time.Second):
		t.Fatal("waiter did not acquire after its pub/sub connection was killed")
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("waiter took %v, more than the holder's 2s lease", d)
	}
}

func TestLockDeadline(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	defer mustUnlock(t, holder)
	admin := srv.NewClient(t)
	ignore := goleak.IgnoreCurrent()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := rlock.New(srv.NewClient(t), name).Lock(ctx)
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want context.DeadlineExceeded", err)
	}
	if d < 300*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("Lock returned after %v, want 300-600ms", d)
	}
	redistest.WaitFor(t, time.Second, func() bool { return numSub(t, admin, name) == 0 })
	redistest.VerifyNone(t, ignore)
}

func TestFencing(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	var last uint64
	for i := range 10 {
		m := rlock.New(srv.NewClient(t), name, rlock.WithFencing())
		err := m.Do(t.Context(), func(ctx context.Context) error {
			if err := m.Lock(ctx); err != nil { // a re-entry keeps the token
				return err
			}
			tok := m.Token()
			if tok <= last {
				t.Fatalf("hold %d: token %d not above previous %d", i, tok, last)
			}
			last = tok
			return m.Unlock(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if m.Token() != 0 {
			t.Fatal("Token not 0 after release")
		}
	}
}

func TestOnePubSubConnection(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	admin := srv.NewClient(t)
	base := redistest.UniqueName(t)
	var holders []*rlock.Mutex
	for i := range 20 {
		h := rlock.New(rdb, base+strconv.Itoa(i))
		mustLock(t, h)
		holders = append(holders, h)
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			m := rlock.New(rdb, base+strconv.Itoa(i%20))
			if err := m.Lock(t.Context()); err != nil {
				t.Error(err)
				return
			}
			_ = m.Unlock(t.Context())
		})
	}
	redistest.WaitFor(t, 10*time.Second, func() bool {
		for i := range 20 {
			if numSub(t, admin, base+strconv.Itoa(i)) != 10 {
				return false
			}
		}
		return true
	})
	if n := redistest.ClientCount(t, admin, "pubsub"); n != 1 {
		t.Fatalf("%d pub/sub connections for 200 waiters on 20 locks, want 1", n)
	}
	for _, h := range holders {
		mustUnlock(t, h)
	}
	wg.Wait()
}

func TestWrongType(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	key := keyspace.NewNames(name).Lock()
	rdb.Set(ctx, key, "precious", 0)
	err := rlock.New(rdb, name).Lock(ctx)
	if !errors.Is(err, rlock.ErrWrongType) {
		t.Fatalf("Lock on a string key = %v, want ErrWrongType", err)
	}
	if v := rdb.Get(ctx, key).Val(); v != "precious" {
		t.Fatalf("string key changed to %q", v)
	}
	rdb.Del(ctx, key)
}

func waitSubscribed(t *testing.T, admin redis.UniversalClient, name string, n int64) {
	t.Helper()
	redistest.WaitFor(t, 5*time.Second, func() bool { return numSub(t, admin, name) >= n })
}

// numSub counts the parked waiters of the lock called name: those in
// line whose own channel is subscribed.
func numSub(t testing.TB, admin redis.UniversalClient, name string) int64 {
	t.Helper()
	n := keyspace.NewNames(name)
	var parked int64
	for _, owner := range admin.LRange(t.Context(), n.Queue(), 0, -1).Val() {
		parked += redistest.NumSub(t, admin, n.WaiterChannel(owner))
	}
	return parked
}

func evalCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info := rdb.Info(t.Context(), "commandstats").Val()
	var total int64
	for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
		if i := strings.Index(info, cmd); i >= 0 {
			rest := info[i+len(cmd):]
			j := 0
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			n, _ := strconv.ParseInt(rest[:j], 10, 64)
			total += n
		}
	}
	return total
}

func assertNoKeys(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	n := keyspace.NewNames(name)
	keys, err := rdb.Keys(t.Context(), n.Lock()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != n.Fence() {
			t.Fatalf("key %q left behind", k)
		}
		if rdb.PTTL(t.Context(), k).Val() == -1 {
			t.Fatalf("fencing counter %q left without an expiry", k)
		}
	}
}

// grantTo parks waiter behind holder, which holds the lock, and returns
// once the holder's release has granted waiter the lock and waiter holds.
func grantTo(t *testing.T, holder, waiter *rlock.Mutex) {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(t.Context()) }()
	waitSubscribed(t, redistest.SharedServer(t).NewClient(t), waiter.Name(), 1)
	mustUnlock(t, holder)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// A waiter with a fixed lease completes a grant with an acquire script,
// which sets its own lease: the grant's is not its own.
func TestGrantToFixedLeaseWaiter(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	const lease = 20 * time.Second
	waiter := rlock.New(srv.NewClient(t), name, rlock.WithLeaseTime(lease))
	grantTo(t, holder, waiter)
	if ttl, err := waiter.TTL(t.Context()); err != nil || ttl <= hold.GrantLease {
		t.Fatalf("TTL after the grant = %v, %v; want the waiter's own lease %v", ttl, err, lease)
	}
	mustUnlock(t, waiter)
}

// A grant takes a new fencing token, above the releaser's, and the
// grantee's Token is it: the one its hold records in Redis.
func TestGrantTakesFencingToken(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name, rlock.WithFencing())
	mustLock(t, holder)
	first := holder.Token()
	waiter := rlock.New(srv.NewClient(t), name, rlock.WithFencing())
	grantTo(t, holder, waiter)
	tok := waiter.Token()
	if tok <= first {
		t.Fatalf("grantee's token %d, want above the releaser's %d", tok, first)
	}
	n := keyspace.NewNames(name)
	if got := srv.NewClient(t).HGet(t.Context(), n.Lock(), "@token").Val(); got != strconv.FormatUint(tok, 10) {
		t.Fatalf("the hold records token %q, want the grantee's %d", got, tok)
	}
	mustUnlock(t, waiter)
}

// A grant message that does not name the waiter's last refused attempt
// (one read late, after its grant lapsed and a later attempt of the same
// wait was refused: the same hold id, an earlier attempt) is not taken for
// a grant: the waiter tries again, is refused, and waits on while the
// holder holds.
func TestStaleGrantMessageIsNotClaimed(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	holder := rlock.New(srv.NewClient(t), name)
	mustLock(t, holder)
	waiter := rlock.New(srv.NewClient(t), name)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(t.Context()) }()
	waitSubscribed(t, admin, name, 1)
	n := keyspace.NewNames(name)
	owners := admin.LRange(t.Context(), n.Queue(), 0, -1).Val()
	if len(owners) != 1 {
		t.Fatalf("line %v, want the waiter alone", owners)
	}
	place := admin.Get(t.Context(), n.Place(owners[0])).Val() // "<hold id>#<attempt>"
	i := strings.LastIndexByte(place, '#')
	attempt, err := strconv.ParseUint(place[i+1:], 10, 64)
	if i < 0 || err != nil || attempt < 1 {
		t.Fatalf("the waiter's place %q names no attempt", place)
	}
	base := evalCalls(t, admin)
	stale := fmt.Sprintf("h0:%s#%d", place[:i], attempt-1)
	if err := admin.Publish(t.Context(), n.WaiterChannel(owners[0]), stale).Err(); err != nil {
		t.Fatal(err)
	}
	// Woken, the waiter checks with an attempt, which is refused.
	redistest.WaitFor(t, 2*time.Second, func() bool { return evalCalls(t, admin) > base })
	select {
	case err := <-got:
		t.Fatalf("the waiter's Lock returned %v on a grant that named another attempt, while the holder holds", err)
	case <-time.After(100 * time.Millisecond):
	}
	if ok, err := holder.IsHeld(t.Context()); !ok || err != nil {
		t.Fatalf("holder IsHeld = %v, %v", ok, err)
	}
	mustUnlock(t, holder) // a real grant
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, waiter)
}

// A re-entry into a hold that is gone from Redis (force-unlocked, and
// another owner took the lock) fails at once as lost: it does not join
// the line, where a later grant would pass for the old hold.
func TestReentryIntoLostHold(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	lost := make(chan error, 1)
	h := rlock.New(srv.NewClient(t), name, rlock.WithOnLost(func(err error) { lost <- err }))
	x := rlock.New(srv.NewClient(t), name)
	err := h.Do(t.Context(), func(ctx context.Context) error {
		if ok, err := rlock.New(admin, name).ForceUnlock(t.Context()); !ok || err != nil {
			t.Fatalf("ForceUnlock = %v, %v", ok, err)
		}
		mustLock(t, x)
		defer mustUnlock(t, x)
		err := h.Lock(ctx)
		if !errors.Is(err, rlock.ErrLost) {
			t.Errorf("re-entry into a lost hold = %v, want ErrLost", err)
		}
		if ok, err := h.TryLock(ctx); ok || err == nil {
			t.Errorf("TryLock re-entry after the loss = %v, %v; want an error", ok, err)
		}
		if n := admin.LLen(t.Context(), keyspace.NewNames(name).Queue()).Val(); n != 0 {
			t.Errorf("%d waiters in line after the re-entry, want none", n)
		}
		return nil
	})
	t.Logf("Do = %v", err)
	if !redistest.Closed(h.Done()) {
		t.Error("Done open after the re-entry found the hold gone")
	}
	select {
	case err := <-lost:
		if !errors.Is(err, rlock.ErrLost) {
			t.Errorf("OnLost(%v), want ErrLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("OnLost did not run")
	}
}

// lockAsync starts m.Lock(ctx) and returns where its error will arrive,
// once the call waits on m's local line behind the goroutine holding m.
func lockAsync(t *testing.T, ctx context.Context, m *rlock.Mutex) <-chan error {
	t.Helper()
	before := rlock.Queued(m)
	return startLock(t, ctx, m, 2*time.Second, func() bool { return rlock.Queued(m) > before })
}

// startLock starts m.Lock(ctx) and returns where its error will arrive,
// once waiting reports, within d, that the call waits.
func startLock(t *testing.T, ctx context.Context, m *rlock.Mutex, d time.Duration, waiting func() bool) <-chan error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- m.Lock(ctx) }()
	redistest.WaitFor(t, d, waiting)
	return got
}

// Goroutines sharing a handle pass its hold on without a round trip: the
// Unlock of one with another waiting on the handle runs no script, and
// the other holds.
func TestLocalHandoff(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	m := rlock.New(srv.NewClient(t), name)
	mustLock(t, m)
	got := lockAsync(t, t.Context(), m)
	base := evalCalls(t, admin)
	mustUnlock(t, m)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := evalCalls(t, admin) - base; n != 0 {
		t.Errorf("%d scripts ran for a handoff between goroutines of one handle, want 0", n)
	}
	if ok, err := m.IsHeld(t.Context()); !ok || err != nil {
		t.Fatalf("IsHeld after the local handoff = %v, %v", ok, err)
	}
	mustUnlock(t, m) // nobody waits: released in Redis
	if ok, err := m.IsLocked(t.Context()); ok || err != nil {
		t.Fatalf("IsLocked after the last Unlock = %v, %v", ok, err)
	}
}

// A hold passes between goroutines of a handle a bounded number of times:
// a waiter of another process, parked in the Redis line, holds after at
// most maxPasses+1 (8) critical sections of the handle. The same holds
// for handles of one process, which pass the lock to each other in their
// release scripts.
func TestLocalHandoffServesOthers(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "goroutines of a handle", false: "handles of a process"}[shared], func(t *testing.T) {
			srv := redistest.SharedServer(t)
			name := redistest.UniqueName(t)
			rdb := srv.NewClient(t)
			m := rlock.New(rdb, name)
			handles := []*rlock.Mutex{m, m, m}
			if !shared {
				handles = []*rlock.Mutex{m, rlock.New(rdb, name), rlock.New(rdb, name)}
			}
			servesOthers(t, srv.NewClient(t), name, handles)
		})
	}
}

// servesOthers has a goroutine per handle lock and unlock in a loop, and
// checks that a waiter of another process (on client other) holds after
// at most 8 of their critical sections once it parked in line.
func servesOthers(t *testing.T, other *redis.Client, name string, handles []*rlock.Mutex) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sections atomic.Int64
	var wg sync.WaitGroup
	for _, m := range handles {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := m.Lock(ctx); err != nil {
					return
				}
				sections.Add(1)
				_ = m.Unlock(ctx)
			}
		})
	}
	redistest.WaitFor(t, 2*time.Second, func() bool { return sections.Load() > 10 })
	// The waiter's client asks the server's version before its first
	// script (once per client): ask it now, so that the waiter parks
	// right after its first attempt. The handles above park in the
	// same line, so the poll below may see one of theirs first; the
	// longer the waiter takes to park, the more of their sections count.
	if err := script.CheckServer(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	waiter := rlock.New(other, name)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(t.Context()) }()
	redistest.WaitFor(t, 2*time.Second, func() bool {
		return other.LLen(t.Context(), keyspace.NewNames(name).Queue()).Val() > 0
	})
	parked := sections.Load()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := sections.Load() - parked; n > 8 {
		t.Errorf("the process held %d times while another process was parked in line, want at most 8", n)
	}
	mustUnlock(t, waiter)
	cancel()
	wg.Wait()
}

// A call that gives up while the hold is being handed to it passes it on,
// and the hold is released in Redis when nobody else waits for it: the
// lock is never left held by nobody.
func TestLocalHandoffToCallThatGivesUp(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	m := rlock.New(srv.NewClient(t), name)
	for range 20 {
		mustLock(t, m)
		ctx, cancel := context.WithCancel(t.Context())
		got := lockAsync(t, ctx, m)
		cancel()
		mustUnlock(t, m)
		if err := <-got; err == nil {
			mustUnlock(t, m) // it took the hold before it saw the cancellation
		}
		redistest.WaitFor(t, 2*time.Second, func() bool {
			ok, err := m.IsLocked(t.Context())
			return err == nil && !ok
		})
	}
}

// With fencing every hold takes a token of its own from Redis, so a hold
// is never passed on locally.
func TestNoLocalHandoffWithFencing(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	m := rlock.New(srv.NewClient(t), name, rlock.WithFencing())
	mustLock(t, m)
	first := m.Token()
	got := lockAsync(t, t.Context(), m)
	mustUnlock(t, m)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if tok := m.Token(); tok <= first {
		t.Fatalf("the next hold's token %d, want more than %d", tok, first)
	}
	mustUnlock(t, m)
}
