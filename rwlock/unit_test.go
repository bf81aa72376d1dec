package rwlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// Unit tier: miniredis, with time advanced by FastForward.

func TestReadersShareWriterExcludesMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	r1, r2, w := rwlock.New(rdb, "m"), rwlock.New(rdb, "m"), rwlock.New(rdb, "m")
	mustRLock(t, r1)
	mustRLock(t, r2)
	if ok, err := w.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while read-locked = %v, %v", ok, err)
	}
	mustRUnlock(t, r1)
	if ok, _ := w.TryLock(ctx); ok {
		t.Fatal("TryLock succeeded while a reader remains")
	}
	mustRUnlock(t, r2)
	if ok, err := w.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock on a free lock = %v, %v", ok, err)
	}
	if ok, err := r1.TryRLock(ctx); ok || err != nil {
		t.Fatalf("TryRLock while write-locked = %v, %v", ok, err)
	}
	if ok, _ := r1.TryLock(ctx); ok {
		t.Fatal("a second writer got the lock")
	}
	mustUnlock(t, w)
	assertNoKeysMini(t, rdb, "m")
}

func TestReentrancyMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	a, b := rwlock.New(rdb, "re"), rwlock.New(rdb, "re")
	mustRLock(t, a)
	mustRLock(t, a)
	if got := field(t, rdb, "re", "r:"); got != "1" {
		t.Fatalf("read level of the handle's hold = %q, want 1 (its two readers are counted in the process)", got)
	}
	mustRUnlock(t, a)
	if ok, _ := b.TryLock(ctx); ok {
		t.Fatal("writer got in while a reader holds one level")
	}
	mustRUnlock(t, a)
	if err := a.RUnlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("RUnlock after release = %v, want ErrNotHeld", err)
	}

	err := a.Do(ctx, func(ctx context.Context) error {
		if err := a.Lock(ctx); err != nil { // re-entry through the hold's ctx
			return err
		}
		if err := a.Unlock(ctx); err != nil {
			return err
		}
		if ok, _ := b.TryRLock(ctx); ok {
			t.Fatal("reader got in while the writer holds one level")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("Unlock after release = %v, want ErrNotHeld", err)
	}
	assertNoKeysMini(t, rdb, "re")
}

func TestDowngradeMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	w, other := rwlock.New(rdb, "down"), rwlock.New(rdb, "down")
	var done <-chan struct{}
	err := w.Do(ctx, func(ctx context.Context) error {
		done = w.Done()
		for range 2 {
			if err := w.RLock(ctx); err != nil { // a downgrade: the write hold's ctx
				return err
			}
		}
		if ok, _ := other.TryRLock(ctx); ok {
			t.Fatal("a reader got in beside the writer")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("Done closed on a downgrade")
	default:
	}
	if ok, err := other.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock beside the downgraded reader = %v, %v", ok, err)
	}
	if ok, _ := rwlock.New(rdb, "down").TryLock(ctx); ok {
		t.Fatal("a writer got in while two readers hold the lock")
	}
	mustRUnlock(t, other)
	mustRUnlock(t, w)
	mustRUnlock(t, w)
	<-done
	assertNoKeysMini(t, rdb, "down")
}

func TestUpgradeRefusedMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	r := rwlock.New(rdb, "up")
	err := r.RDo(t.Context(), func(ctx context.Context) error {
		if err := r.Lock(ctx); !errors.Is(err, rwlock.ErrUpgradeNotSupported) {
			t.Fatalf("Lock with a read hold's ctx = %v, want ErrUpgradeNotSupported", err)
		}
		if ok, err := r.TryLock(ctx); ok || !errors.Is(err, rwlock.ErrUpgradeNotSupported) {
			t.Fatalf("TryLock with a read hold's ctx = %v, %v, want ErrUpgradeNotSupported", ok, err)
		}
		if n, _ := rdb.Exists(ctx, keyspace.NewNames("up").Writers()).Result(); n != 0 {
			t.Fatal("the refused upgrade left an announcement")
		}
		if got := field(t, rdb, "up", "r:"); got != "1" {
			t.Fatalf("read holds after the refused upgrade = %q, want 1", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A plain Lock while the handle holds a plain read lock waits, as a
	// sync.RWMutex's would, and leaves nothing behind.
	mustRLock(t, r)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := r.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("plain Lock beside a plain read hold = %v, want it to wait", err)
	}
	mustRUnlock(t, r)
	mustLock(t, r) // no longer a reader: an ordinary Lock
	mustUnlock(t, r)
	assertNoKeysMini(t, rdb, "up")
}

func TestNotHeldChangesNothingMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	reader, writer, stranger := rwlock.New(rdb, "nh"), rwlock.New(rdb, "nh2"), rwlock.New(rdb, "nh")
	mustRLock(t, reader)
	mustLock(t, writer)
	before := dump(t, rdb)
	for name, err := range map[string]error{
		"stranger RUnlock":       stranger.RUnlock(ctx),
		"stranger Unlock":        stranger.Unlock(ctx),
		"reader Unlock":          reader.Unlock(ctx),
		"writer RUnlock":         writer.RUnlock(ctx),
		"writer's name stranger": rwlock.New(rdb, "nh2").Unlock(ctx),
	} {
		if !errors.Is(err, rwlock.ErrNotHeld) {
			t.Errorf("%s = %v, want ErrNotHeld", name, err)
		}
	}
	if after := dump(t, rdb); after != before {
		t.Fatalf("a refused unlock changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	select {
	case <-reader.Done():
		t.Fatal("a refused Unlock ended the reader's hold")
	case <-writer.Done():
		t.Fatal("a refused RUnlock ended the writer's hold")
	default:
	}
	mustRUnlock(t, reader)
	mustUnlock(t, writer)
}

func TestForceUnlockMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	r1, r2 := rwlock.New(rdb, "f"), rwlock.New(rdb, "f")
	mustRLock(t, r1)
	mustRLock(t, r2)
	if ok, err := r1.ForceUnlock(ctx); !ok || err != nil {
		t.Fatalf("ForceUnlock of a read lock = %v, %v", ok, err)
	}
	<-r1.Done()
	assertNoKeysMini(t, rdb, "f")
	if err := r2.RUnlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("RUnlock after ForceUnlock = %v, want ErrNotHeld", err)
	}
	<-r2.Done() // the refused RUnlock told it the hold was gone

	w := rwlock.New(rdb, "f")
	err := w.Do(ctx, func(ctx context.Context) error {
		if err := w.RLock(ctx); err != nil { // a downgrade
			return err
		}
		if ok, err := r1.ForceUnlock(ctx); !ok || err != nil {
			t.Fatalf("ForceUnlock of a write lock = %v, %v", ok, err)
		}
		assertNoKeysMini(t, rdb, "f")
		return nil
	})
	if !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("Unlock after ForceUnlock = %v, want ErrNotHeld", err)
	}
	<-w.Done()
	if ok, err := r1.ForceUnlock(ctx); ok || err != nil {
		t.Fatalf("ForceUnlock of no lock = %v, %v", ok, err)
	}
	mustLock(t, r1)
	mustUnlock(t, r1)
}

func TestReaderLeasesMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	a := rwlock.New(rdb, "lease", rwlock.WithLeaseTime(3*time.Minute))
	b := rwlock.New(rdb, "lease", rwlock.WithLeaseTime(time.Minute))
	crashed := rwlock.New(rdb, "lease", rwlock.WithLeaseTime(time.Minute))
	w := rwlock.New(rdb, "lease")
	mustRLock(t, b)
	mustRLock(t, a)
	mustRLock(t, crashed)
	mustRUnlock(t, b)
	if ttl, _ := a.TTL(ctx); ttl <= 2*time.Minute {
		t.Fatalf("TTL after the short reader left = %v, want a's 3m lease", ttl)
	}
	mr.FastForward(61 * time.Second) // the crashed reader's lease ends
	if ok, _ := w.TryLock(ctx); ok {
		t.Fatal("writer got in while a reader's lease runs")
	}
	mustRUnlock(t, a)
	if ok, err := w.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the last live reader left = %v, %v", ok, err)
	}
	if err := crashed.RUnlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("RUnlock after the lease ran out = %v, want ErrNotHeld", err)
	}
	mustUnlock(t, w)
	assertNoKeysMini(t, rdb, "lease")

	mustRLock(t, a)
	mr.FastForward(3*time.Minute + time.Second)
	if ok, err := w.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after every lease ran out = %v, %v", ok, err)
	}
	if err := a.RUnlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("RUnlock after the lease ran out = %v, want ErrNotHeld", err)
	}
	<-a.Done()
	mustUnlock(t, w)
}

func TestWriterPreferenceMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	reader := rwlock.New(rdb, "pref")
	mustRLock(t, reader)
	wctx, cancel := context.WithCancel(ctx)
	locked := make(chan error, 1)
	go func() { locked <- rwlock.New(rdb, "pref").Lock(wctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.Exists(keyspace.NewNames("pref").Writers()) })

	newcomer := rwlock.New(rdb, "pref")
	if ok, err := newcomer.TryRLock(ctx); ok || err != nil {
		t.Fatalf("new reader behind a waiting writer: TryRLock = %v, %v", ok, err)
	}
	mustRLock(t, reader) // a re-entry does not wait
	mustRUnlock(t, reader)

	cancel()
	if err := <-locked; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
	}
	perclient.AwaitTidied(t.Context()) // the announcement is taken away in the background
	if mr.Exists(keyspace.NewNames("pref").Writers()) {
		t.Fatal("the writer that gave up left its announcement")
	}
	if ok, err := newcomer.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock after the writer gave up = %v, %v", ok, err)
	}
	mustRUnlock(t, newcomer)

	// A writer that crashed while waiting: its announcement lapses.
	keys := rwKeys("pref")
	if res, err := script.RWWriteTake(ctx, rdb, keys, script.RWWriteArgs{ID: "ghost:1", Lease: time.Minute, Fencing: false, Announce: true, Patience: rwlock.WaiterTimeout, Deadline: redistest.InTime()}).Result(); err != nil || res.OK {
		t.Fatalf("ghost writer's attempt = %+v, %v; want refused", res, err)
	}
	if ok, _ := newcomer.TryRLock(ctx); ok {
		t.Fatal("a new reader passed a live announcement")
	}
	mr.FastForward(rwlock.WaiterTimeout)
	if ok, err := newcomer.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("TryRLock after the announcement lapsed = %v, %v", ok, err)
	}
	mustRUnlock(t, newcomer)
	mustRUnlock(t, reader)
	assertNoKeysMini(t, rdb, "pref")
}

// TestReadersTurnMini: readers that waited behind a write hold go before
// the next writer, as with sync.RWMutex; a reader that never comes holds
// writers back only until its announcement lapses, and one that gives up
// ends the turn at once.
func TestReadersTurnMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	n := keyspace.NewNames("turn")
	w1, w2 := rwlock.New(rdb, "turn"), rwlock.New(rdb, "turn")
	mustLock(t, w1)
	r := rwlock.New(rdb, "turn")
	rlocked := make(chan error, 1)
	go func() { rlocked <- r.RLock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.Exists(n.Readers()) })

	// The released lock is free, but it is the waiting reader's turn.
	mustUnlock(t, w1)
	if ok, err := w2.TryLock(ctx); ok || err != nil {
		t.Fatalf("a writer ahead of the reader whose turn it is: TryLock = %v, %v", ok, err)
	}
	if err := <-rlocked; err != nil {
		t.Fatal(err)
	}
	if mr.Exists(n.Turn()) || mr.Exists(n.Readers()) {
		t.Fatal("the turn outlived its reader's coming")
	}
	mustRUnlock(t, r)
	if ok, err := w2.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the reader's turn = %v, %v", ok, err)
	}

	// A reader that crashed while waiting: its turn lapses with its
	// announcement.
	refusedReader(t, rdb, "turn", "ghost", 1)
	mustUnlock(t, w2)
	if ok, _ := w1.TryLock(ctx); ok {
		t.Fatal("a writer passed the turn of a live announcement")
	}
	mr.FastForward(rwlock.WaiterTimeout)
	if ok, err := w1.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the announcement lapsed = %v, %v", ok, err)
	}
	// ForceUnlock ends such a turn at once, though no lock is held.
	refusedReader(t, rdb, "turn", "ghost", 2)
	mustUnlock(t, w1)
	if ok, err := w1.ForceUnlock(ctx); ok || err != nil {
		t.Fatalf("ForceUnlock of a free lock = %v, %v; want false, nil", ok, err)
	}
	if ok, err := w1.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after ForceUnlock ended the turn = %v, %v", ok, err)
	}

	// A blocking RLock that gives up takes its announcement with it.
	rctx, cancel := context.WithCancel(ctx)
	go func() { rlocked <- r.RLock(rctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.Exists(n.Readers()) })
	cancel()
	if err := <-rlocked; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled RLock = %v, want context.Canceled", err)
	}
	perclient.AwaitTidied(t.Context()) // the announcement is taken away in the background
	if mr.Exists(n.Readers()) {
		t.Fatal("the reader that gave up left its announcement")
	}

	// A reader that gives up in its turn ends it, and wakes the writers
	// the turn held back.
	keys := refusedReader(t, rdb, "turn", "quitter", 1)
	mustUnlock(t, w1)
	woken := rdb.Subscribe(ctx, n.WriterChannel())
	defer woken.Close()
	if _, err := woken.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := script.RWWithdraw(ctx, rdb, keys, "quitter", true, false, time.Now().Add(exactly.RequestWindow).UnixMilli()).Result(); err != nil || !ok {
		t.Fatalf("quitter's withdrawal = %v, %v", ok, err)
	}
	select {
	case <-woken.Channel():
	case <-time.After(5 * time.Second):
		t.Fatal("the end of the turn woke no writer")
	}
	if mr.Exists(n.Turn()) {
		t.Fatal("the turn outlived its last reader's withdrawal")
	}
	if ok, err := w2.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the turn ended = %v, %v", ok, err)
	}
	mustUnlock(t, w2)
	assertNoKeysMini(t, rdb, "turn")
}

// refusedReader runs a blocking read attempt of owner's hold n on the
// lock called name, as a reader that then never comes back would: it must
// be refused, which announces owner as a waiting reader. It returns the
// lock's keys.
func refusedReader(t testing.TB, rdb redis.UniversalClient, name, owner string, n uint64) script.RWKeys {
	t.Helper()
	keys := rwKeys(name)
	res, err := script.RWReadTake(t.Context(), rdb, keys, script.RWReadArgs{ID: owner + ":" + strconv.FormatUint(n, 10), Lease: time.Minute, Announce: true, Patience: rwlock.WaiterTimeout, Deadline: redistest.InTime()}).Result()
	if err != nil || res.OK {
		t.Fatalf("%s's read attempt = %+v, %v; want refused", owner, res, err)
	}
	return keys
}

// TestSiblingGivesUpMini: two goroutines of one handle wait to read, and
// share the handle's announcement; when one gives up, the other still
// waits, so the announcement stays and the write release makes it the
// waiter's turn.
func TestSiblingGivesUpMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	n := keyspace.NewNames("sib")
	w1, w2, r := rwlock.New(rdb, "sib"), rwlock.New(rdb, "sib"), rwlock.New(rdb, "sib")
	mustLock(t, w1)
	aDone := make(chan error, 1)
	go func() { aDone <- r.RLock(ctx) }()
	redistest.WaitFor(t, 5*time.Second, func() bool { return mr.Exists(n.Readers()) })

	// b's first command tells when b has been refused in Redis too.
	asked := make(chan struct{}, 1)
	rdb.AddHook(ctxHook{after: func(ctx context.Context, _ redis.Cmder) {
		if ctx.Value(siblingKey{}) != nil {
			select {
			case asked <- struct{}{}:
			default:
			}
		}
	}})
	bctx, cancel := context.WithCancel(context.WithValue(ctx, siblingKey{}, true))
	bDone := make(chan error, 1)
	go func() { bDone <- r.RLock(bctx) }()
	<-asked
	cancel()
	if err := <-bDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the sibling's RLock = %v, want context.Canceled", err)
	}
	if !mr.Exists(n.Readers()) {
		t.Fatal("a sibling's giving up withdrew the announcement of a goroutine still waiting")
	}
	mustUnlock(t, w1)
	if ok, err := w2.TryLock(ctx); ok || err != nil {
		t.Fatalf("a writer ahead of the waiting goroutine's turn: TryLock = %v, %v", ok, err)
	}
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	mustRUnlock(t, r)
	assertNoKeysMini(t, rdb, "sib")
}

type siblingKey struct{}

func TestWrongTypeMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	if err := mr.Set(lockKey("str"), "user data"); err != nil {
		t.Fatal(err)
	}
	held := rlock.New(rdb, "mutex") // an rlock under the same name
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	before := dump(t, rdb)
	for _, name := range []string{"str", "mutex"} {
		rw := rwlock.New(rdb, name)
		_, err1 := rw.TryRLock(ctx)
		_, err2 := rw.TryLock(ctx)
		_, err3 := rw.ForceUnlock(ctx)
		for i, err := range []error{err1, err2, err3} {
			if !errors.Is(err, rwlock.ErrWrongType) {
				t.Errorf("%s: call %d = %v, want ErrWrongType", name, i, err)
			}
		}
	}
	if after := dump(t, rdb); after != before {
		t.Fatalf("data changed:\nbefore %s\nafter  %s", before, after)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDoneMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rw := rwlock.New(rdb, "done")
	select {
	case <-rw.Done():
	default:
		t.Fatal("Done open with nothing held")
	}
	mustRLock(t, rw)
	d := rw.Done()
	mustRLock(t, rw)
	mustRUnlock(t, rw)
	select {
	case <-d:
		t.Fatal("Done closed while a read level remains")
	default:
	}
	mustRUnlock(t, rw)
	<-d
}

func TestNewPanics(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for name, f := range map[string]func(){
		"nil client":    func() { rwlock.New(nil, "x") },
		"empty name":    func() { rwlock.New(rdb, "") },
		"zero lease":    func() { rwlock.New(rdb, "x", rwlock.WithLeaseTime(0)) },
		"tiny watchdog": func() { rwlock.New(rdb, "x", rwlock.WithWatchdogTimeout(time.Millisecond)) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); len(s) < 10 {
					t.Fatalf("panic %v is not a clear message", r)
				}
			}()
			f()
		})
	}
}

func TestErrorMessages(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rw := rwlock.New(rdb, "orders")
	if got, want := rw.RUnlock(t.Context()).Error(), `rwlock: runlock "orders": lock not held`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
	if got, want := rw.Unlock(t.Context()).Error(), `rwlock: unlock "orders": lock not held`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

func TestDoMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rw, other := rwlock.New(rdb, "do"), rwlock.New(rdb, "do")
	errFn := errors.New("fn failed")
	err := rw.Do(ctx, func(ctx context.Context) error {
		if ok, err := other.TryRLock(ctx); ok || err != nil {
			t.Errorf("TryRLock inside Do = %v, %v; want refused", ok, err)
		}
		return errFn
	})
	if !errors.Is(err, errFn) {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	err = rw.RDo(ctx, func(ctx context.Context) error {
		if ok, err := other.TryRLock(ctx); !ok || err != nil {
			t.Errorf("TryRLock inside RDo = %v, %v; want a second reader", ok, err)
		}
		mustRUnlock(t, other)
		if ok, err := other.TryLock(ctx); ok || err != nil {
			t.Errorf("TryLock inside RDo = %v, %v; want refused", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("RDo = %v", err)
	}
	if locked, err := rw.IsLocked(ctx); locked || err != nil {
		t.Fatalf("IsLocked after Do and RDo = %v, %v; want free", locked, err)
	}
	assertNoKeysMini(t, rdb, "do")
}

// With WithFencing every first write acquisition takes a new token,
// above every earlier one also after Redis lost the counter, and Token
// returns it while the write hold lasts: a re-entry keeps it, read holds
// (a downgraded writer's included) have none, and neither has a handle
// without fencing.
func TestFencingMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	w := rwlock.New(rdb, "fence", rwlock.WithFencing())
	mustLock(t, w)
	first := w.Token()
	if first == 0 {
		t.Fatal("a write hold with fencing has no token")
	}
	mustUnlock(t, w)
	if w.Token() != 0 {
		t.Fatal("Token not 0 after the release")
	}
	mustRLock(t, w)
	if w.Token() != 0 {
		t.Fatal("a read hold has a token")
	}
	mustRUnlock(t, w)

	wctx, wend := writeHold(t, w)
	second := w.Token()
	if second <= first {
		t.Fatalf("second write hold's token %d, want above %d", second, first)
	}
	if err := w.Lock(wctx); err != nil || w.Token() != second {
		t.Fatalf("re-entry = %v, token %d; want the hold's %d", err, w.Token(), second)
	}
	if err := w.Unlock(wctx); err != nil {
		t.Fatal(err)
	}
	if err := w.RLock(wctx); err != nil { // a downgrade
		t.Fatal(err)
	}
	wend()
	if w.Token() != 0 {
		t.Fatalf("Token %d after the write hold ended, its read hold left; want 0", w.Token())
	}
	mustRUnlock(t, w)

	mr.FlushAll() // Redis lost its data, the counter with it
	other := rwlock.New(rdb, "fence", rwlock.WithFencing())
	mustLock(t, other)
	if tok := other.Token(); tok <= second {
		t.Fatalf("token after the data loss %d, want above %d", tok, second)
	}
	mustUnlock(t, other)
	plain := rwlock.New(rdb, "fence")
	if ok, err := plain.TryLock(ctx); !ok || err != nil || plain.Token() != 0 {
		t.Fatalf("TryLock without fencing = %v, %v, token %d; want held, no token", ok, err, plain.Token())
	}
	mustUnlock(t, plain)
}

// IsHeld says whether this handle holds the lock in either mode, and
// HoldCount the depth of the hold ctx carries, as rlock's do.
func TestIsHeldAndHoldCountMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rw, other := rwlock.New(rdb, "held"), rwlock.New(rdb, "held")
	if held, err := rw.IsHeld(ctx); held || err != nil {
		t.Fatalf("IsHeld before any lock = %v, %v", held, err)
	}
	err := rw.Do(ctx, func(ctx context.Context) error {
		if err := rw.Lock(ctx); err != nil {
			return err
		}
		if n, err := rw.HoldCount(ctx); n != 2 || err != nil {
			t.Errorf("HoldCount after a re-entry = %d, %v; want 2", n, err)
		}
		if held, err := rw.IsHeld(ctx); !held || err != nil {
			t.Errorf("IsHeld of the writer = %v, %v", held, err)
		}
		if held, err := other.IsHeld(ctx); held || err != nil {
			t.Errorf("IsHeld of another handle = %v, %v", held, err)
		}
		return rw.Unlock(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rw.HoldCount(ctx); n != 0 || err != nil {
		t.Fatalf("HoldCount after Do = %d, %v; want 0", n, err)
	}
	err = rw.RDo(ctx, func(ctx context.Context) error {
		if n, err := rw.HoldCount(ctx); n != 1 || err != nil {
			t.Errorf("HoldCount of RDo's hold = %d, %v; want 1", n, err)
		}
		if held, err := rw.IsHeld(ctx); !held || err != nil {
			t.Errorf("IsHeld of the reader = %v, %v", held, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := rw.IsHeld(ctx); held || err != nil {
		t.Fatalf("IsHeld after RDo = %v, %v", held, err)
	}
}
