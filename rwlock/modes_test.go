package rwlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Integration tier, continued: downgrade, upgrade, refused unlocks, force
// unlock, a writer that gives up. Every scenario runs on a real
// redis-server and on a real 3-master cluster.

// lockAsync runs lock in a goroutine; the channel gets its error and when
// it returned.
func lockAsync(ctx context.Context, lock func(context.Context) error) <-chan result {
	c := make(chan result, 1)
	go func() {
		err := lock(ctx)
		c <- result{err, time.Now()}
	}()
	return c
}

type result struct {
	err error
	at  time.Time
}

// TestDowngrade: a writer that takes a read hold stays a reader after its
// Unlock, and the readers waiting behind it get in at once.
func TestDowngrade(t *testing.T) { onBoth(t, testDowngrade) }

func testDowngrade(t *testing.T, e env) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	w := rwlock.New(e.client(t), name)
	wctx, wend := writeHold(t, w)
	waiting := rwlock.New(e.client(t), name)
	got := lockAsync(ctx, waiting.RLock)
	redistest.WaitFor(t, 5*time.Second, func() bool { return e.subscribers(t, name, keyspace.Names.Channel) == 1 })
	if err := w.RLock(wctx); err != nil { // a downgrade
		t.Fatal(err)
	}
	start := time.Now()
	wend()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	within(t, "the waiting reader got in", r.at.Sub(start), 0, 500*time.Millisecond)
	if ok, _ := rwlock.New(e.client(t), name).TryLock(ctx); ok {
		t.Fatal("a writer got in beside two readers")
	}
	select {
	case <-w.Done():
		t.Fatal("the downgrade ended the hold")
	default:
	}
	mustRUnlock(t, waiting)
	mustRUnlock(t, w)
	e.assertNoKeys(t, name)
}

// TestUpgradeRefused: a read hold's ctx asking for the write lock gets
// ErrUpgradeNotSupported at once, and nothing changes.
func TestUpgradeRefused(t *testing.T) { onBoth(t, testUpgradeRefused) }

func testUpgradeRefused(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	r := rwlock.New(e.client(t), name)
	other := rwlock.New(e.client(t), name)
	mustRLock(t, other)
	tctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var newcomer *rwlock.RWMutex
	err := r.RDo(tctx, func(ctx context.Context) error {
		start := time.Now()
		if err := r.Lock(ctx); !errors.Is(err, rwlock.ErrUpgradeNotSupported) {
			t.Fatalf("Lock with a read hold's ctx = %v, want ErrUpgradeNotSupported", err)
		}
		within(t, "the upgrade was refused", time.Since(start), 0, 500*time.Millisecond)
		if ok, err := r.TryLock(ctx); ok || !errors.Is(err, rwlock.ErrUpgradeNotSupported) {
			t.Fatalf("TryLock with a read hold's ctx = %v, %v; want ErrUpgradeNotSupported", ok, err)
		}
		newcomer = rwlock.New(e.client(t), name)
		if ok, err := newcomer.TryRLock(ctx); !ok || err != nil {
			t.Fatalf("a new reader after the refused upgrade: TryRLock = %v, %v; want no announcement left", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*rwlock.RWMutex{other, newcomer} {
		mustRUnlock(t, h)
	}
	e.assertNoKeys(t, name)
}

// TestNotHeld: Unlock or RUnlock by a non-holder returns ErrNotHeld and
// changes nothing.
func TestNotHeld(t *testing.T) { onBoth(t, testNotHeld) }

func testNotHeld(t *testing.T, e env) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	reader := rwlock.New(e.client(t), name)
	mustRLock(t, reader)
	node := e.node(t, name)
	before := redistest.Holders(ctx, node, lockKey(name))
	stranger := rwlock.New(e.client(t), name)
	for what, err := range map[string]error{
		"stranger RUnlock": stranger.RUnlock(ctx),
		"stranger Unlock":  stranger.Unlock(ctx),
		"reader Unlock":    reader.Unlock(ctx),
	} {
		if !errors.Is(err, rwlock.ErrNotHeld) {
			t.Errorf("%s = %v, want ErrNotHeld", what, err)
		}
	}
	after := redistest.Holders(ctx, node, lockKey(name))
	if len(after) != len(before) || after["mode"] != "read" {
		t.Fatalf("lock hash %v after refused unlocks, was %v", after, before)
	}
	for f, v := range before {
		if after[f] != v {
			t.Fatalf("lock hash %v after refused unlocks, was %v", after, before)
		}
	}
	mustRUnlock(t, reader)
	e.assertNoKeys(t, name)
}

// TestForceUnlockFreesBothModes: ForceUnlock of a read lock lets a waiting
// writer in, ForceUnlock of a write lock lets the waiting readers in, and
// no key is left either time.
func TestForceUnlockFreesBothModes(t *testing.T) { onBoth(t, testForceUnlock) }

func testForceUnlock(t *testing.T, e env) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	var lost atomic.Int32
	onLost := rwlock.WithOnLost(func(err error) {
		if !errors.Is(err, rwlock.ErrLost) {
			t.Errorf("loss reported as %v, want ErrLost", err)
		}
		lost.Add(1)
	})
	r1 := rwlock.New(e.client(t), name, rwlock.WithWatchdogTimeout(time.Second), onLost)
	r2 := rwlock.New(e.client(t), name, rwlock.WithWatchdogTimeout(time.Second), onLost)
	mustRLock(t, r1)
	mustRLock(t, r2)
	w := rwlock.New(e.client(t), name)
	wrote := lockAsync(ctx, w.Lock)
	redistest.WaitFor(t, 5*time.Second, func() bool { return e.subscribers(t, name, keyspace.Names.WriterChannel) == 1 })
	start := time.Now()
	if ok, err := rwlock.New(e.client(t), name).ForceUnlock(ctx); !ok || err != nil {
		t.Fatalf("ForceUnlock of a read lock = %v, %v", ok, err)
	}
	if r := <-wrote; r.err != nil {
		t.Fatal(r.err)
	} else {
		within(t, "the waiting writer got in", r.at.Sub(start), 0, 500*time.Millisecond)
	}
	for _, r := range []*rwlock.RWMutex{r1, r2} {
		select {
		case <-r.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("a force-unlocked reader's Done did not close")
		}
	}
	redistest.WaitFor(t, time.Second, func() bool { return lost.Load() == 2 })

	readers := []*rwlock.RWMutex{rwlock.New(e.client(t), name), rwlock.New(e.client(t), name)}
	var reads []<-chan result
	for _, r := range readers {
		reads = append(reads, lockAsync(ctx, r.RLock))
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return e.subscribers(t, name, keyspace.Names.Channel) == 2 })
	if ok, err := r1.ForceUnlock(ctx); !ok || err != nil {
		t.Fatalf("ForceUnlock of a write lock = %v, %v", ok, err)
	}
	for _, c := range reads {
		if r := <-c; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if ok, err := r1.ForceUnlock(ctx); !ok || err != nil {
		t.Fatalf("ForceUnlock of the new readers = %v, %v", ok, err)
	}
	e.assertNoKeys(t, name)
	if err := w.Unlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
		t.Fatalf("Unlock after ForceUnlock = %v, want ErrNotHeld", err)
	}
	for _, r := range readers {
		if err := r.RUnlock(ctx); !errors.Is(err, rwlock.ErrNotHeld) {
			t.Fatalf("RUnlock after ForceUnlock = %v, want ErrNotHeld", err)
		}
	}
}

// TestWriterGivesUp: a waiting writer whose ctx ends withdraws its
// announcement and wakes the readers it held back.
func TestWriterGivesUp(t *testing.T) { onBoth(t, testWriterGivesUp) }

func testWriterGivesUp(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	reader := rwlock.New(e.client(t), name)
	mustRLock(t, reader)
	wctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	wrote := lockAsync(wctx, rwlock.New(e.client(t), name).Lock)
	redistest.WaitFor(t, 5*time.Second, func() bool {
		n, _ := e.node(t, name).Exists(t.Context(), keyspace.NewNames(name).Writers()).Result()
		return n == 1
	})
	newcomer := rwlock.New(e.client(t), name)
	read := lockAsync(t.Context(), newcomer.RLock)
	w := <-wrote
	if !errors.Is(w.err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want context.DeadlineExceeded", w.err)
	}
	r := <-read
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The writer's withdrawal wakes the readers before its own reply
	// reaches the writer, so the reader may hold a few microseconds before
	// the writer's Lock returns; a reader in while the writer still
	// waited would be far earlier than that.
	within(t, "the held-back reader got in", r.at.Sub(w.at), -50*time.Millisecond, 300*time.Millisecond)
	redistest.WaitFor(t, 2*time.Second, func() bool { return e.subscribers(t, name, keyspace.Names.WriterChannel) == 0 })
	mustRUnlock(t, newcomer)
	mustRUnlock(t, reader)
	e.assertNoKeys(t, name)
}
