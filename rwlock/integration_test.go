package rwlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Integration tier: every scenario runs on a real redis-server and on a
// real 3-master cluster.

// TestMixedReadersAndWriters: 8 clients x 8 goroutines doing random reads
// and writes. Writers do an unprotected read-modify-write of a Redis counter
// and check that nobody else is inside; readers check that no writer is
// inside, and must be seen overlapping.
func TestMixedReadersAndWriters(t *testing.T) { onBoth(t, testMixed) }

func testMixed(t *testing.T, e env) {
	const clients, workers, iters = 8, 8, 12
	ctx := t.Context()
	name := redistest.UniqueName(t)
	counter := "counter:{" + name + "}"
	var readersIn, writersIn, maxReaders, writes atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		rdb := e.client(t)
		for range workers {
			wg.Go(func() {
				rw := rwlock.New(rdb, name)
				for range iters {
					var err error
					if rand.IntN(4) == 0 {
						err = writeOnce(ctx, rw, rdb, counter, &readersIn, &writersIn)
						writes.Add(1)
					} else {
						err = readOnce(ctx, rw, &readersIn, &writersIn, &maxReaders)
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got, _ := e.client(t).Get(ctx, counter).Int64()
	if want := writes.Load(); got != want {
		t.Fatalf("counter = %d after %d writes: mutual exclusion violated", got, want)
	}
	if n := maxReaders.Load(); n < 2 {
		t.Fatalf("at most %d reader inside at once: readers did not overlap", n)
	}
	t.Logf("%d writes, up to %d readers at once", writes.Load(), maxReaders.Load())
	e.client(t).Del(ctx, counter)
	e.assertNoKeys(t, name)
}

func writeOnce(ctx context.Context, rw *rwlock.RWMutex, rdb redis.UniversalClient, counter string, readersIn, writersIn *atomic.Int64) error {
	if err := rw.Lock(ctx); err != nil {
		return err
	}
	if w := writersIn.Add(1); w != 1 || readersIn.Load() != 0 {
		return errors.New("a writer is inside with someone else")
	}
	n, err := rdb.Get(ctx, counter).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if err := rdb.Set(ctx, counter, n+1, 0).Err(); err != nil {
		return err
	}
	writersIn.Add(-1)
	return rw.Unlock(ctx)
}

func readOnce(ctx context.Context, rw *rwlock.RWMutex, readersIn, writersIn, maxReaders *atomic.Int64) error {
	if err := rw.RLock(ctx); err != nil {
		return err
	}
	n := readersIn.Add(1)
	for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
	}
	if writersIn.Load() != 0 {
		return errors.New("a reader is inside with a writer")
	}
	time.Sleep(time.Millisecond) // the read itself
	readersIn.Add(-1)
	return rw.RUnlock(ctx)
}

// TestReadersWokenTogether: 20 goroutines blocked in RLock behind a writer
// all get in within 100ms of the write Unlock, or, on a machine too busy
// for that, all woken by its notification rather than by their sleeps'
// end. (A sleep may end in the moment between the Unlock and its
// notification; then the reader must still be in within 100ms.)
func TestReadersWokenTogether(t *testing.T) { onBoth(t, testReadersWokenTogether) }

func testReadersWokenTogether(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	writer := rwlock.New(e.client(t), name)
	mustLock(t, writer)
	clients := []redis.UniversalClient{e.client(t), e.client(t)}
	parks := redistest.CountParks(t, clients...)
	got := make(chan time.Time, 20)
	readers := make([]*rwlock.RWMutex, 20)
	for i := range readers {
		readers[i] = rwlock.New(clients[i%2], name)
		go func() {
			if err := readers[i].RLock(t.Context()); err != nil {
				t.Error(err)
			}
			got <- time.Now()
		}()
	}
	// Every reader parked: refused, or queued behind another of its client.
	redistest.WaitFor(t, 10*time.Second, func() bool { return parks.N() == 20 })
	unnotified := parks.Unnotified()
	start := time.Now()
	mustUnlock(t, writer)
	var last time.Duration
	for range readers {
		last = max(last, (<-got).Sub(start))
	}
	for _, r := range readers {
		mustRUnlock(t, r)
	}
	t.Logf("the last of 20 readers got in %v after the write Unlock", last)
	if timed := parks.Unnotified() - unnotified; last > 100*time.Millisecond && timed > 0 {
		t.Fatalf("the last of 20 waiting readers got in %v after the write Unlock, and %d woke without its notification; want within 100ms, or all notified", last, timed)
	}
	e.assertNoKeys(t, name)
}

// TestReaderLeaseExpiry: reader A has a 3s lease and never unlocks; reader
// B has a 1s lease and unlocks at once; a writer waiting from the start
// gets the lock when A's lease ends.
func TestReaderLeaseExpiry(t *testing.T) {
	redistest.Long(t)
	onBoth(t, testReaderLeaseExpiry)
}

func testReaderLeaseExpiry(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	a := rwlock.New(e.client(t), name, rwlock.WithLeaseTime(3*time.Second))
	b := rwlock.New(e.client(t), name, rwlock.WithLeaseTime(time.Second))
	w := rwlock.New(e.client(t), name)
	start := time.Now()
	mustRLock(t, a)
	mustRLock(t, b)
	locked := make(chan time.Duration, 1)
	go func() {
		if err := w.Lock(t.Context()); err != nil {
			t.Error(err)
		}
		locked <- time.Since(start)
	}()
	mustRUnlock(t, b)
	d := <-locked
	t.Logf("the writer got the lock after %v", d)
	within(t, "the writer got the lock", d, 2950*time.Millisecond, 3500*time.Millisecond)
	select {
	case <-a.Done():
	case <-time.After(time.Second):
		t.Fatal("the expired reader's Done did not close")
	}
	mustUnlock(t, w)
	e.assertNoKeys(t, name)
}

// TestCrashedReader: a reader whose client is closed without unlocking
// stops blocking writers within about its 1s watchdog lease.
func TestCrashedReader(t *testing.T) {
	redistest.Long(t)
	onBoth(t, testCrashedReader)
}

func testCrashedReader(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	crashing := e.client(t)
	reader := rwlock.New(crashing, name, rwlock.WithWatchdogTimeout(time.Second))
	live := rwlock.New(e.client(t), name, rwlock.WithLeaseTime(200*time.Millisecond))
	mustRLock(t, reader)
	mustRLock(t, live) // a short reader that leaves on time
	mustRUnlock(t, live)
	w := rwlock.New(e.client(t), name)
	crashing.Close() // the process "dies": no RUnlock, no renewals
	start := time.Now()
	mustLock(t, w)
	d := time.Since(start)
	t.Logf("the writer got the lock %v after the crash", d)
	within(t, "the writer got the lock", d, 0, 1500*time.Millisecond)
	<-reader.Done()
	mustUnlock(t, w)
	e.assertNoKeys(t, name)
}

// TestWriterNotStarved: 16 goroutines keep taking overlapping 5ms read
// holds; a writer that starts waiting gets the lock once the read holds
// begun before it announced itself have ended.
func TestWriterNotStarved(t *testing.T) { onBoth(t, testWriterNotStarved) }

func testWriterNotStarved(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	ctx, stop := context.WithCancel(t.Context())
	var reads atomic.Int64
	var wg sync.WaitGroup
	clients := []redis.UniversalClient{e.client(t), e.client(t), e.client(t), e.client(t)}
	for i := range 16 {
		wg.Go(func() {
			rw := rwlock.New(clients[i%4], name)
			for ctx.Err() == nil {
				if err := rw.RLock(ctx); err != nil {
					return
				}
				reads.Add(1)
				time.Sleep(5 * time.Millisecond)
				if err := rw.RUnlock(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	redistest.WaitFor(t, 10*time.Second, func() bool { return reads.Load() >= 100 })
	// Counted in read holds, not time, from the reply to the writer's
	// first attempt (see testReadersNotStarved): a reader that asks after
	// the writer announced itself is refused, so only the reads whose
	// attempts were on their way then, one per goroutine at most, begin
	// after the count starts. Without the announcement the writer got in
	// only when it won a race against 16 overlapping readers.
	wc := e.client(t)
	countFromScript(wc, &reads)
	w := rwlock.New(wc, name)
	var from atomic.Int64
	from.Store(-1)
	wctx, cancel := context.WithTimeout(context.WithValue(t.Context(), countFrom{}, &from), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := w.Lock(wctx)
	d, after := time.Since(start), reads.Load()-from.Load()
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("the writer did not get the lock behind a stream of readers: %v", err)
	}
	mustUnlock(t, w)
	t.Logf("the writer waited %v, for %d read holds to begin", d, after)
	if after > 16 {
		t.Fatalf("the writer waited for %d read holds to begin, want at most 16 (one per reading goroutine)", after)
	}
	e.assertNoKeys(t, name)
}

// TestReadersNotStarved: 4 goroutines keep taking 5ms write holds, each
// asking again as soon as it releases; a reader that starts waiting still
// gets in after at most one more write hold, because a write release gives
// the waiting readers their turn before any writer.
func TestReadersNotStarved(t *testing.T) { onBoth(t, testReadersNotStarved) }

func testReadersNotStarved(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	ctx, stop := context.WithCancel(t.Context())
	var writes atomic.Int64
	var wg sync.WaitGroup
	clients := []redis.UniversalClient{e.client(t), e.client(t)}
	for i := range 4 {
		wg.Go(func() {
			rw := rwlock.New(clients[i%2], name)
			for ctx.Err() == nil {
				if err := rw.Lock(ctx); err != nil {
					return
				}
				writes.Add(1)
				time.Sleep(5 * time.Millisecond)
				if err := rw.Unlock(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	redistest.WaitFor(t, 10*time.Second, func() bool { return writes.Load() >= 20 })
	// Counted in write holds, not time, and from the reply to the reader's
	// first attempt, so that a slow machine does not fail it: a reader
	// refused during a write hold gets its turn when that hold ends, ahead
	// of every writer, and one refused while a writer is announced waits
	// for that writer's hold too: one write hold at most, counted late or
	// begun after the count starts. Without the turn, a reader got in only
	// when it won a race against the writers, after 3 to 40 write holds.
	rc := e.client(t)
	countFromScript(rc, &writes)
	var most int64
	for range 5 {
		r := rwlock.New(rc, name)
		var from atomic.Int64
		from.Store(-1)
		if err := r.RLock(context.WithValue(t.Context(), countFrom{}, &from)); err != nil {
			t.Fatal(err)
		}
		most = max(most, writes.Load()-from.Load())
		mustRUnlock(t, r)
	}
	stop()
	wg.Wait()
	t.Logf("the slowest of 5 readers waited for %d write holds to begin, behind a stream of writers", most)
	if most > 2 {
		t.Fatalf("a reader waited for %d write holds to begin, want at most 2", most)
	}
	e.assertNoKeys(t, name)
}

// TestParkedWaitersKept: two goroutines of one handle parked to read and a
// writer parked behind a write hold that lasts longer than WriterPatience
// make no attempt while it lasts: their client keeps their announcements
// alive, the readers' shared one once a round (keeping it twice would tell
// one of them to attempt each round). When the hold ends the readers come
// in first (their turn), then the writer.
func TestParkedWaitersKept(t *testing.T) {
	redistest.Long(t)
	onBoth(t, testParkedWaitersKept)
}

func testParkedWaitersKept(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	ctx := t.Context()
	holder := rwlock.New(e.client(t), name)
	mustLock(t, holder)
	rdb := e.client(t)
	parks := redistest.CountParks(t, rdb)
	reader, writer := rwlock.New(rdb, name), rwlock.New(rdb, name)
	order := make(chan string, 3)
	for range 2 {
		go func() {
			if err := reader.RLock(ctx); err != nil {
				t.Error(err)
			}
			order <- "reader"
		}()
	}
	redistest.WaitFor(t, 10*time.Second, func() bool { return parks.N() == 2 })
	go func() {
		if err := writer.Lock(ctx); err != nil {
			t.Error(err)
		}
		order <- "writer"
	}()
	redistest.WaitFor(t, 10*time.Second, func() bool { return parks.N() == 3 })
	attempts := parks.Attempts()
	// Past the announcements' life: they are there only if kept.
	time.Sleep(rwlock.WaiterTimeout + time.Second)
	if n := parks.Attempts() - attempts; n != 0 {
		t.Errorf("the parked waiters made %d attempts during the write hold, want none", n)
	}
	node, names := e.node(t, name), keyspace.NewNames(name)
	now := float64(node.Time(ctx).Val().UnixMilli())
	for _, set := range []string{names.Readers(), names.Writers()} {
		live := node.ZCount(ctx, set, strconv.FormatFloat(now, 'f', 0, 64), "+inf").Val()
		if live != 1 {
			t.Errorf("%s has %d live announcements, want 1", set, live)
		}
	}
	mustUnlock(t, holder)
	for range 2 {
		if next := <-order; next != "reader" {
			t.Fatalf("the %s came in before both readers after the write hold", next)
		}
	}
	mustRUnlock(t, reader)
	mustRUnlock(t, reader)
	<-order
	mustUnlock(t, writer)
	e.assertNoKeys(t, name)
}
