package rwlock_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/rwlock"
)

// Integration tier, continued: crashes, the watchdog, a killed pub/sub
// connection. Every scenario runs on a real redis-server and on a real
// 3-master cluster.

// TestCrashedWaitingWriter: the announcement of a writer that crashed while
// waiting holds new readers back for WriterPatience, not longer.
func TestCrashedWaitingWriter(t *testing.T) {
	redistest.Long(t)
	onBoth(t, testCrashedWaitingWriter)
}

func testCrashedWaitingWriter(t *testing.T, e env) {
	name := redistest.UniqueName(t)
	reader := rwlock.New(e.client(t), name)
	mustRLock(t, reader)
	// The ghost writer makes one announcing attempt and is never seen again.
	keys := rwKeys(name)
	start := time.Now()
	res, err := script.RWWriteTake(t.Context(), e.client(t), keys, script.RWWriteArgs{ID: "ghost:1", Lease: time.Minute, Fencing: false, Announce: true, Patience: rwlock.WaiterTimeout, Deadline: redistest.InTime()}).Result()
	if err != nil || res.OK {
		t.Fatalf("ghost writer's attempt = %+v, %v; want refused", res, err)
	}
	newcomer := rwlock.New(e.client(t), name)
	mustRLock(t, newcomer)
	d := time.Since(start)
	t.Logf("the new reader got in %v after the ghost writer's announcement", d)
	within(t, "the new reader got in", d, rwlock.WaiterTimeout-100*time.Millisecond, rwlock.WaiterTimeout+500*time.Millisecond)
	mustRUnlock(t, newcomer)
	mustRUnlock(t, reader)
	e.assertNoKeys(t, name)
}

// TestWatchdogKeepsBothModes: the watchdog renews read and write holds
// (a downgraded writer's too) past their lease, and nothing renews after
// the release.
func TestWatchdogKeepsBothModes(t *testing.T) {
	redistest.Long(t)
	onBoth(t, testWatchdog)
}

func testWatchdog(t *testing.T, e env) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	opt := rwlock.WithWatchdogTimeout(time.Second)
	reader, writer := rwlock.New(e.client(t), name, opt), rwlock.New(e.client(t), name+"-w", opt)
	mustRLock(t, reader)
	wctx, wend := writeHold(t, writer)
	if err := writer.RLock(wctx); err != nil { // a downgrade
		t.Fatal(err)
	}
	other := rwlock.New(e.client(t), name)
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, _ := other.TryLock(ctx); ok {
			t.Fatal("a writer got in while the watchdog kept a reader")
		}
		if ttl, err := writer.TTL(ctx); err != nil || ttl <= 0 {
			t.Fatalf("write lock TTL = %v, %v while kept by the watchdog", ttl, err)
		}
	}
	wend() // downgrade: still renewed as a reader
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ttl, err := writer.TTL(ctx); err != nil || ttl <= 0 {
			t.Fatalf("downgraded lock TTL = %v, %v while kept by the watchdog", ttl, err)
		}
	}
	for _, h := range []*rwlock.RWMutex{reader, writer} {
		select {
		case <-h.Done():
			t.Fatal("Done closed while the watchdog kept the hold")
		default:
		}
		mustRUnlock(t, h)
	}
	e.assertNoKeys(t, name)
	e.assertNoKeys(t, name+"-w")
}

// TestWaitersSurvivePubSubKill: readers waiting while their pub/sub
// connection is killed still get the lock soon after the release, well
// before the writer's lease would have run out.
func TestWaitersSurvivePubSubKill(t *testing.T) { onBoth(t, testPubSubKill) }

func testPubSubKill(t *testing.T, e env) {
	ctx := t.Context()
	name := redistest.UniqueName(t)
	holder := rwlock.New(e.client(t), name, rwlock.WithLeaseTime(5*time.Second))
	mustLock(t, holder)
	rdb := e.client(t)
	readers := []*rwlock.RWMutex{rwlock.New(rdb, name), rwlock.New(rdb, name), rwlock.New(rdb, name)}
	var waits []<-chan result
	for _, r := range readers {
		waits = append(waits, lockAsync(ctx, r.RLock))
	}
	redistest.WaitFor(t, 5*time.Second, func() bool { return e.subscribers(t, name, keyspace.Names.Channel) == 1 })
	if err := e.node(t, name).Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustUnlock(t, holder)
	for _, c := range waits {
		r := <-c
		if r.err != nil {
			t.Fatal(r.err)
		}
		within(t, "a waiting reader got in", r.at.Sub(start), 0, 2*time.Second)
	}
	for _, r := range readers {
		mustRUnlock(t, r)
	}
	e.assertNoKeys(t, name)
}
