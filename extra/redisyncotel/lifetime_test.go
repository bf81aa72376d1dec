package redisyncotel_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	rso "github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// The instrumentation does not keep a client reachable: an instrumented
// client that was used, closed and dropped is collected. (redisync's
// per-client registry keeps an idle client for a second; the poll allows
// for that.)
func TestClientCollected(t *testing.T) {
	srv := redistest.SharedServer(t)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(t.Context())
	collected := make(chan struct{})
	func() {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		if err := rso.Instrument(rdb, rso.WithMeterProvider(mp)); err != nil {
			t.Fatal(err)
		}
		m := rlock.New(rdb, redistest.UniqueName(t))
		if err := m.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(rdb, func(c chan struct{}) { close(c) }, collected)
		_ = rdb.Close()
	}()
	redistest.WaitFor(t, 15*time.Second, func() bool {
		runtime.GC()
		select {
		case <-collected:
			return true
		default:
			return false
		}
	})
}

// A wake-up connection that breaks under a parked waiter comes back, and
// that is a reconnect.
func TestReconnect(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	a, b, done := r.parked(t, ctx)
	r.waitCount(t, rso.MetricPubSubConns, nil, 1)
	if err := r.rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	r.waitCount(t, rso.MetricPubSubReconnects, nil, 1)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The reconnected connection is the same one: it closes once, after
	// its linger, and the count comes back to 0, not below.
	r.waitCount(t, rso.MetricPubSubConns, nil, 0)
}
