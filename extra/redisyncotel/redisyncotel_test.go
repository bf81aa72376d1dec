package redisyncotel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/redisync/redisync/election"
	rso "github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// A contended rlock handoff: the second Lock is refused, parks, is woken
// by the Unlock's notification and acquires; its span tells that story
// and is a child of the caller's span.
func TestContendedHandoff(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	pctx, parent := r.tp.Tracer("test").Start(ctx, "request")
	a, b, done := r.parked(t, pctx)
	rlockKV := kv{rso.AttrPrimitive: "rlock"}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	parent.End()
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	if n := r.count(t, rso.MetricWaiters, rlockKV); n != 0 {
		t.Errorf("waiters = %d after the handoff, want 0", n)
	}
	acquired := kv{rso.AttrPrimitive: "rlock", rso.AttrOutcome: "acquired"}
	if n := r.count(t, rso.MetricAcquireDuration, acquired); n != 2 {
		t.Errorf("acquires recorded as acquired: %d, want 2", n)
	}
	if n := r.count(t, rso.MetricAcquireAttempts, kv{rso.AttrPrimitive: "rlock", rso.AttrOutcome: "contended"}); n < 1 {
		t.Errorf("contended attempts: %d, want at least 1", n)
	}
	if n := r.count(t, rso.MetricHoldDuration, rlockKV); n != 2 {
		t.Errorf("holds recorded: %d, want 2", n)
	}
	// The wake-up connection opened for the waiter closes after its
	// linger: the up-down counter comes back to 0.
	r.waitCount(t, rso.MetricPubSubConns, nil, 0)
	if _, ok := r.collect(t)[rso.MetricPubSubConns]; !ok {
		t.Error("no pub/sub connection was reported")
	}

	spans := r.ended("redisync.rlock.acquire")
	if len(spans) != 2 {
		t.Fatalf("%d rlock acquire spans, want 2 (one per Lock)", len(spans))
	}
	s := spans[1] // b's, which ended last
	if s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the waiter's span is not a child of the caller's")
	}
	// Refused, parked, woken by the Unlock's grant, which the waiter
	// completes without another attempt (the one-hop handoff): the span
	// ends with the wake-up, and the acquire is recorded as acquired.
	ev := events(s)
	want := []string{"attempt:contended", "park", "wake-up:notified"}
	if !slices.Equal(ev, want) {
		t.Errorf("events %v, want %v", ev, want)
	}
	t.Logf("events of the waiter's span: %v", ev)
	if s.Status().Code == codes.Error {
		t.Errorf("status %v for an acquire that succeeded", s.Status())
	}
}

// A hold forced off by another handle is lost: the watchdog's renewal
// finds it gone.
func TestLoss(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	m := rlock.New(r.rdb, name, rlock.WithWatchdogTimeout(300*time.Millisecond))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rlock.New(r.rdb, name).ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the forced-off hold did not end")
	}
	r.waitCount(t, rso.MetricLost, kv{rso.AttrPrimitive: "rlock"}, 1)
	if n := r.count(t, rso.MetricRenewals, kv{rso.AttrOutcome: "lost"}); n != 1 {
		t.Errorf("renewals found lost: %d, want 1", n)
	}
	if n := r.count(t, rso.MetricRenewalDuration, nil); n < 1 {
		t.Error("no renewal batch was timed")
	}
	if n := r.count(t, rso.MetricHoldDuration, kv{rso.AttrPrimitive: "rlock"}); n != 1 {
		t.Errorf("holds recorded: %d, want 1", n)
	}
}

// A semaphore waiter parks until a release; the leased semaphore's
// watchdog-kept permit is a hold.
func TestSemaphoreWait(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	s := semaphore.New(r.rdb, redistest.UniqueName(t))
	if err := s.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TryAcquire(ctx, 1); ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v on an empty semaphore", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, 1) }()
	semKV := kv{rso.AttrPrimitive: "semaphore"}
	r.waitCount(t, rso.MetricWaiters, semKV, 1)
	if err := s.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "semaphore", rso.AttrOutcome: "acquired"}); n != 2 {
		t.Errorf("semaphore acquires: %d, want 2", n)
	}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "semaphore", rso.AttrOutcome: "contended"}); n != 1 {
		t.Errorf("contended TryAcquire: %d, want 1", n)
	}
	if n := r.count(t, rso.MetricWaiters, semKV); n != 0 {
		t.Errorf("waiters = %d after the wait, want 0", n)
	}
	if n := len(r.ended("redisync.semaphore.acquire")); n != 2 {
		t.Errorf("%d semaphore acquire spans, want 2 (TryAcquire has none)", n)
	}

	l := semaphore.NewLeased(r.rdb, redistest.UniqueName(t))
	if err := l.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	id, err := l.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := r.count(t, rso.MetricHoldDuration, kv{rso.AttrPrimitive: "leased"}); n != 1 {
		t.Errorf("leased holds: %d, want 1", n)
	}
}

// A latch waiter reports its wait as a blocking acquire of the latch: it
// parks until the count reaches zero, then counts as acquired.
func TestLatchWait(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	l := latch.New(r.rdb, name)
	if ok, err := l.TrySetCount(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx) }()
	latchKV := kv{rso.AttrPrimitive: "latch"}
	r.waitCount(t, rso.MetricWaiters, latchKV, 1)
	if err := latch.New(r.rdb, name).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "latch", rso.AttrOutcome: "acquired"}); n != 1 {
		t.Errorf("latch waits recorded acquired: %d, want 1", n)
	}
	if n := r.count(t, rso.MetricWaiters, latchKV); n != 0 {
		t.Errorf("waiters = %d after the wait, want 0", n)
	}
	if n := len(r.ended("redisync.latch.acquire")); n != 1 {
		t.Errorf("%d latch wait spans, want 1", n)
	}
}

// A group reports its acquisitions as multilock, on the client of its
// first member; its members report as themselves.
func TestMultilock(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	a, b := redistest.UniqueName(t)+"-a", redistest.UniqueName(t)+"-b"
	g := multilock.New(rlock.New(r.rdb, a), rlock.New(r.rdb, b))
	if err := g.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other := multilock.New(rlock.New(r.rdb, b), rlock.New(r.rdb, a))
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock of a held group = %v, %v", ok, err)
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		outcome string
		want    int64
	}{{"acquired", 1}, {"contended", 1}} {
		if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "multilock", rso.AttrOutcome: c.outcome}); n != c.want {
			t.Errorf("multilock acquires %s: %d, want %d", c.outcome, n, c.want)
		}
	}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "rlock", rso.AttrOutcome: "acquired"}); n < 2 {
		t.Errorf("member acquires: %d, want at least 2", n)
	}
	if n := len(r.ended("redisync.multilock.acquire")); n != 1 {
		t.Errorf("%d multilock acquire spans, want 1 (TryLock has none)", n)
	}
}

// A read-write lock reports each side as a primitive of its own.
func TestRWLock(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	rw, other := rwlock.New(r.rdb, name), rwlock.New(r.rdb, name)
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock = %v, %v while read-locked", ok, err)
	}
	if err := rw.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		metric, primitive, outcome string
		want                       int64
	}{
		{rso.MetricAcquireDuration, "rwlock.read", "acquired", 1},
		{rso.MetricAcquireDuration, "rwlock.write", "acquired", 1},
		{rso.MetricAcquireDuration, "rwlock.write", "contended", 1},
		{rso.MetricAcquireAttempts, "rwlock.write", "contended", 1},
		{rso.MetricHoldDuration, "rwlock.read", "", 1},
		{rso.MetricHoldDuration, "rwlock.write", "", 1},
	} {
		want := kv{rso.AttrPrimitive: c.primitive}
		if c.outcome != "" {
			want[rso.AttrOutcome] = c.outcome
		}
		if n := r.count(t, c.metric, want); n != c.want {
			t.Errorf("%s %v: %d, want %d", c.metric, want, n, c.want)
		}
	}
	if len(r.ended("redisync.rwlock.read.acquire")) != 1 || len(r.ended("redisync.rwlock.write.acquire")) != 1 {
		t.Error("want one span per blocking acquire of each side")
	}
}

// A fair lock reports as fairlock, through the same engine.
func TestFairlock(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	m := fairlock.New(r.rdb, redistest.UniqueName(t))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "fairlock", rso.AttrOutcome: "acquired"}); n != 1 {
		t.Errorf("fairlock acquires: %d, want 1", n)
	}
	if n := r.count(t, rso.MetricHoldDuration, kv{rso.AttrPrimitive: "fairlock"}); n != 1 {
		t.Errorf("fairlock holds: %d, want 1", n)
	}
	spans := r.ended("redisync.fairlock.acquire")
	if len(spans) != 1 || len(spans[0].Events()) != 0 {
		t.Errorf("want one span without events for an uncontended Lock, got %d", len(spans))
	}
}

// A Lock whose ctx ends while it waits is canceled, and its span fails.
func TestCanceled(t *testing.T) {
	r := newRig(t, rso.WithNames())
	ctx := t.Context()
	name := redistest.UniqueName(t)
	a, b := rlock.New(r.rdb, name), rlock.New(r.rdb, name)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Unlock(ctx)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := b.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want the deadline", err)
	}
	want := kv{rso.AttrPrimitive: "rlock", rso.AttrOutcome: "canceled", rso.AttrName: name}
	if n := r.count(t, rso.MetricAcquireDuration, want); n != 1 {
		t.Errorf("canceled acquires named %q: %d, want 1", name, n)
	}
	spans := r.ended("redisync.rlock.acquire")
	if len(spans) != 2 || spans[1].Status().Code != codes.Error {
		t.Fatalf("want the canceled acquire's span with an error status")
	}
	if !slices.ContainsFunc(spans[1].Attributes(), func(a attribute.KeyValue) bool { return string(a.Key) == rso.AttrName && a.Value.AsString() == name }) {
		t.Error("WithNames: the span has no redisync.name")
	}
}

func TestInstrumentTwice(t *testing.T) {
	r := newRig(t)
	if err := rso.Instrument(r.rdb); !errors.Is(err, rso.ErrInstrumented) {
		t.Fatalf("second Instrument = %v, want ErrInstrumented", err)
	}
}

// An election reports as primitive "election" through the same hooks: a
// Campaign that waits in line and takes over at the Resign is one
// acquire span with the park and the wake-up, and each leadership is a
// hold.
func TestElection(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	a, b := election.New(r.rdb, name), election.New(r.rdb, name)
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Campaign(ctx, "b") }()
	r.waitCount(t, rso.MetricWaiters, kv{rso.AttrPrimitive: "election"}, 1)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}

	elect := kv{rso.AttrPrimitive: "election"}
	if n := r.count(t, rso.MetricAcquireDuration, kv{rso.AttrPrimitive: "election", rso.AttrOutcome: "acquired"}); n != 2 {
		t.Errorf("campaigns recorded as acquired: %d, want 2", n)
	}
	if n := r.count(t, rso.MetricHoldDuration, elect); n != 2 {
		t.Errorf("leaderships recorded as holds: %d, want 2", n)
	}
	if n := r.count(t, rso.MetricWaiters, elect); n != 0 {
		t.Errorf("waiters = %d after the takeover, want 0", n)
	}
	spans := r.ended("redisync.election.acquire")
	if len(spans) != 2 {
		t.Fatalf("%d election acquire spans, want 2 (one per Campaign)", len(spans))
	}
	ev := events(spans[1])
	if !slices.Contains(ev, "park") || !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "wake-up:") }) {
		t.Errorf("the waiting candidate's span has events %v, want a park and a wake-up", ev)
	}
	t.Logf("events of the waiting candidate's span: %v", ev)
}
