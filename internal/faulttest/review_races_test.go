package faulttest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// afterScript is a go-redis hook that runs fn once, right after the
// first call of a chosen script returns (before its caller sees the
// reply): a moment the test picks between two scripts of one caller.
type afterScript struct {
	match func(args []string) bool
	once  sync.Once
	fn    func()
}

func (a *afterScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *afterScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if a.match(argStrings(cmd)) {
			a.once.Do(a.fn)
		}
		return err
	}
}

func (a *afterScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func argStrings(cmd redis.Cmder) []string {
	args := make([]string, 0, len(cmd.Args()))
	for _, a := range cmd.Args() {
		args = append(args, fmt.Sprint(a))
	}
	return args
}

// A blocking waiter's attempt is refused in Redis (it joins the line,
// its place naming the wait's hold id W) but its reply is lost. The
// engine gives the attempt back by W and retires W: the wait goes on
// under a new id. The holder's release then grants the lock to the place,
// that is to W. Nothing of the handle completes or gives back that grant:
// a grant message naming W is "left to an attempt" (claim compares it
// with the wait's last id, which is W), and every attempt from now on
// names the new id, which never finds W's grant. The lock is held by an
// id nobody renews or releases until the grant lease runs out (or the
// give-back sent once more after RequestWindow); the waiter, and every
// waiter behind it, waits that long, and the waiter is put at the end of
// the line.
func TestGrantToRetiredWaitIDIsGivenBack(t *testing.T) {
	type mutex interface {
		Lock(ctx context.Context) error
		Unlock(ctx context.Context) error
	}
	for _, k := range []struct {
		kind, scripts string
		new           func(rdb *redis.Client, name string) mutex
	}{
		{"rlock", "rlock", func(rdb *redis.Client, name string) mutex { return rlock.New(rdb, name) }},
		{"fairlock", "fairlock", func(rdb *redis.Client, name string) mutex { return fairlock.New(rdb, name) }},
		{"election", "fairlock", func(rdb *redis.Client, name string) mutex { return campaigner{election.New(rdb, name)} }},
	} {
		t.Run(k.kind, func(t *testing.T) {
			direct, proxy, via := redistest.ProxiedServer(t)
			name := redistest.UniqueName(t)
			ctx := t.Context()
			lockKey := keyspace.NewNames(name).Lock()

			holder := k.new(direct, name)
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			// The waiter's first attempt runs in Redis (refused: it joins
			// the line) and its reply is lost; its give-back by the wait's
			// id finds nothing, and just after it the holder unlocks.
			dropped := proxy.DropReply(scriptOn(t, k.scripts+"_acquire.lua", name))
			var unlocked time.Time
			unlock := make(chan error, 1)
			via.AddHook(&afterScript{match: scriptOn(t, k.scripts+"_unlock.lua", name), fn: func() {
				t.Logf("lock hash before the holder's unlock: %v", direct.HGetAll(ctx, lockKey).Val())
				unlocked = time.Now()
				unlock <- holder.Unlock(ctx)
				t.Logf("lock hash after it: %v", direct.HGetAll(ctx, lockKey).Val())
			}})
			waiter := k.new(via, name)
			got := make(chan error, 1)
			var gotAt time.Time
			go func() {
				err := waiter.Lock(ctx)
				gotAt = time.Now()
				got <- err
			}()
			mustDropped(t, dropped)
			var err error
			select {
			case err = <-unlock:
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter gave nothing back after its lost reply")
			}
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				time.Sleep(250 * time.Millisecond)
				t.Logf("+%v lock hash %v", time.Since(unlocked).Round(time.Millisecond), direct.HGetAll(ctx, lockKey).Val())
			}
			select {
			case err = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter never got the lock")
			}
			took := gotAt.Sub(unlocked)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = waiter.Unlock(context.WithoutCancel(ctx)) }()
			t.Logf("the waiter's hold: %v", direct.HGetAll(ctx, lockKey).Val())
			t.Logf("the waiter took the lock %v after the holder's release", took.Round(time.Millisecond))
			if took > time.Second {
				t.Errorf("the waiter, alone in line, took the lock %v after the release: "+
					"the release granted the lock to the wait's retired id, and nothing gave it back", took.Round(time.Millisecond))
			}
		})
	}
}

// campaigner campaigns and resigns as a mutex locks and unlocks.
type campaigner struct{ e *election.Election }

func (c campaigner) Lock(ctx context.Context) error   { return c.e.Campaign(ctx, "v") }
func (c campaigner) Unlock(ctx context.Context) error { return c.e.Resign(ctx) }

// A read-write lock's plain RUnlock that waits for the handle's op while
// another goroutine's RLock is in flight for longer than the release's own
// bound (ReleaseTimeout, 5s: a slow network or server) used to abandon its
// level outside op, owing a release whose expected count the RLock's
// reply then changed: the owed release mismatched and was dropped, and a
// read level leaked, renewed for as long as the process lived. Now the
// hold's readers are counted in the process, on op: a release that cannot
// have op in time settles in the background once it can, and after every
// reader's RUnlock the lock is free.
func TestAbandonOutsideOpIsNotLost(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	faults := addClientFaults(rdb)
	// A lease the 5s the RLock is in flight does not make stale: its
	// reply is applied, not given back.
	const lease = 20 * time.Second
	rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease))
	lockKey := keyspace.NewNames(name).Lock()

	// Goroutines A and B: two plain read holds, one hold id, two levels.
	for range 2 {
		if err := rw.RLock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Goroutine C: a third plain read, in flight (held before it reaches
	// Redis) while A releases.
	gate := faults.holdNextScript()
	res := make(chan error, 1)
	go func() { res <- rw.RLock(context.WithoutCancel(t.Context())) }()
	gate.mustCatch(t, "the call sent nothing to hold")
	start := time.Now()
	errA := rw.RUnlock(t.Context()) // A: waits for op, ReleaseTimeout
	t.Logf("A's RUnlock after %v: %v; lock hash %v", time.Since(start).Round(time.Millisecond), errA, admin.HGetAll(t.Context(), lockKey).Val())
	faults.let(gate)
	if err := <-res; err != nil {
		t.Fatalf("C's RLock: %v", err)
	}
	t.Logf("after C's RLock: lock hash %v", admin.HGetAll(t.Context(), lockKey).Val())
	for _, who := range []string{"B", "C"} {
		if err := rw.RUnlock(t.Context()); err != nil {
			t.Errorf("%s's RUnlock: %v", who, err)
		}
	}
	if errA != nil {
		// A was told its level is gone (owed): nobody has a read hold now.
		waitUntil(2*time.Second, func() bool { return isClosed(rw.Done()) })
	}
	hash, closedDone := admin.HGetAll(t.Context(), lockKey).Val(), isClosed(rw.Done())
	t.Logf("after every reader released: Done closed %v, lock hash %v", closedDone, hash)
	other := rwlock.New(srv.NewClient(t), name, rwlock.WithWatchdogTimeout(lease41))
	ok, err := other.TryLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		_ = other.Unlock(t.Context())
	} else {
		_, _ = rw.ForceUnlock(t.Context())
		t.Errorf("another handle's write TryLock is refused after every reader of the handle released: a read level leaked (Done closed %v, lock hash %v)",
			closedDone, hash)
	}
}

// Local handoffs between goroutines of one rlock handle racing with
// ForceUnlock of that handle (which ends the hold, handed or not, and
// makes its goroutines forget their holds): whatever the interleaving,
// once every goroutine has returned, the handle's local line is free
// (a Lock gets through), its Done is closed after the last Unlock, and
// nothing of the handle is left in Redis. A regression test: it passes.
func TestLocalHandoffRacingForceUnlock(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	m := rlock.New(srv.NewClient(t), name, rlock.WithWatchdogTimeout(lease41))
	var workers sync.WaitGroup
	until := time.Now().Add(1500 * time.Millisecond)
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for time.Now().Before(until) {
				lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if err := m.Lock(lctx); err == nil {
					_ = m.Unlock(ctx)
				}
				cancel()
			}
		}()
	}
	stop, forcer := make(chan struct{}), make(chan int)
	go func() {
		forced := 0
		for {
			select {
			case <-stop:
				forcer <- forced
				return
			case <-time.After(3 * time.Millisecond):
			}
			if ok, _ := m.ForceUnlock(ctx); ok {
				forced++
			}
		}
	}()
	workers.Wait()
	close(stop)
	t.Logf("force-unlocked %d times", <-forcer)

	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.Lock(lctx); err != nil {
		t.Fatalf("Lock after every goroutine returned: %v (the handle's line or a hold was left behind)", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	if !isClosed(m.Done()) {
		t.Error("Done open after the last Unlock")
	}
	if gone, keys, hash := keysGoneWithin(ctx, admin, name, 3*lease41); !gone {
		t.Errorf("keys of the lock left: %v, hash %v", keys, hash)
	}
}

// A read-write lock's further read (a second goroutine's RLock while the
// handle holds a read) was sent under the current hold's id; when its
// reply was lost while the script was still on its way, the give-back
// mismatched, the retry took the level, and the held-up copy then added
// one more level nobody counted: every RUnlock mismatched, and the hold
// stood for a lease after the last one. Now a hold has one read level in
// Redis and the handle counts its readers: a further read sends no
// script, so nothing of it can run late, and the last RUnlock frees the
// lock at once.
func TestLateFurtherReadIsGivenBack(t *testing.T) {
	direct, proxy, _ := redistest.ProxiedServer(t)
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = 500 * time.Millisecond })
	name := redistest.UniqueName(t)
	ctx := t.Context()
	lockKey := keyspace.NewNames(name).Lock()
	const lease = 6 * time.Second
	rw := rwlock.New(via, name, rwlock.WithWatchdogTimeout(lease))
	if err := rw.RLock(ctx); err != nil { // goroutine A
		t.Fatal(err)
	}
	held := proxy.Hold(scriptOn(t, "rwlock_readlock.lua", name))
	if err := rw.RLock(ctx); err != nil { // goroutine B
		t.Fatal(err)
	}
	if redistest.Closed(held.Caught()) {
		t.Fatal("the further read sent an acquire script: a copy of it could run late")
	}
	for _, who := range []string{"A", "B"} {
		if err := rw.RUnlock(ctx); err != nil {
			t.Errorf("%s's RUnlock: %v", who, err)
		}
		t.Logf("after %s's RUnlock: lock hash %v", who, direct.HGetAll(ctx, lockKey).Val())
	}
	t.Logf("handle's Done closed: %v", isClosed(rw.Done()))
	writer := rwlock.New(direct, name)
	start := time.Now()
	for {
		ok, err := writer.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			_ = writer.Unlock(ctx)
			break
		}
		if time.Since(start) > lease+time.Second {
			t.Fatal("the write lock stayed refused")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("a writer waited %v after every reader of the handle released (the lease is %v): read levels nobody counts were left in Redis",
			waited.Round(time.Millisecond), lease)
	}
}

// A leased Acquire with a lease of its own: its first attempt is held up
// on its way and the client gives up on the reply; the engine gives it
// back by the permit id (nothing there yet: the outcome is known, so the
// attempts go on under the same id) and the retry takes the permit. The
// caller releases it. The held-up copy then runs, within its deadline,
// and takes a permit under that id: nobody holds or releases it, and it
// stood for the whole lease the caller asked for. Now every give-back
// retires its permit id, and an attempt of unknown outcome is given back
// once more when no copy can run any more (hold.GiveBackAgain), as a
// lock's is.
func TestLeasedLateAttemptCopyIsGivenBack(t *testing.T) {
	direct, proxy, _ := redistest.ProxiedServer(t)
	via := proxy.NewClient(t, func(o *redis.Options) { o.ReadTimeout = 500 * time.Millisecond })
	name := redistest.UniqueName(t)
	ctx := t.Context()
	admin := semaphore.NewLeased(direct, name)
	if ok, err := admin.TrySetPermits(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	l := semaphore.NewLeased(via, name)
	held := proxy.Hold(scriptOn(t, "leased_acquire.lua", name))
	id, err := l.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(held.Caught()) {
		t.Fatal("no attempt was held: the fault was not injected")
	}
	if err := l.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	reply, err := held.Deliver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the held-up attempt ran late: %q", reply)
	time.Sleep(exactly.RequestWindow + 2*time.Second) // whatever gives it back has had its time
	n, err := admin.Available(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d permits available after the only one was released (permit %s): the late copy of its first attempt holds it for the lease", n, id)
	}
}
