package redisyncotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	rso "github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Overhead of the instrumentation on a real redis-server:
//
//	cd extra/redisyncotel && go test -run '^$' -bench . -benchmem
//
// The instrumented client has the SDK installed as an application would:
// a meter provider with a reader, and a tracer provider that samples
// every span and hands it to an exporter (one that drops it, so that the
// figure is the instrumentation's, not an exporter's).

// instrumentedClient returns a client with the SDK behind it.
func instrumentedClient(b *testing.B) *redis.Client {
	rdb := redistest.SharedServer(b).NewClient(b)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	if err := rso.Instrument(rdb, rso.WithMeterProvider(mp), rso.WithTracerProvider(tp)); err != nil {
		b.Fatal(err)
	}
	return rdb
}

func lockUnlock(b *testing.B, m *rlock.Mutex) {
	ctx := context.Background()
	if err := m.Lock(ctx); err != nil {
		b.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLockUnlock is the uncontended Lock+Unlock pair on a plain
// client and on an instrumented one.
func BenchmarkLockUnlock(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		m := rlock.New(redistest.SharedServer(b).NewClient(b), redistest.UniqueName(b))
		for b.Loop() {
			lockUnlock(b, m)
		}
	})
	b.Run("instrumented", func(b *testing.B) {
		m := rlock.New(instrumentedClient(b), redistest.UniqueName(b))
		for b.Loop() {
			lockUnlock(b, m)
		}
	})
}

// BenchmarkOverhead runs the two pairs of BenchmarkLockUnlock in turn, in
// alternating order, so that a noisy machine slows both alike, and
// reports the time of each and their ratio (instrumented/plain).
func BenchmarkOverhead(b *testing.B) {
	plain := rlock.New(redistest.SharedServer(b).NewClient(b), redistest.UniqueName(b))
	instrumented := rlock.New(instrumentedClient(b), redistest.UniqueName(b))
	var tPlain, tInstr time.Duration
	timed := func(m *rlock.Mutex, total *time.Duration) {
		start := time.Now()
		lockUnlock(b, m)
		*total += time.Since(start)
	}
	odd := false
	for b.Loop() {
		if odd {
			timed(plain, &tPlain)
			timed(instrumented, &tInstr)
		} else {
			timed(instrumented, &tInstr)
			timed(plain, &tPlain)
		}
		odd = !odd
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/pair")
	b.ReportMetric(float64(tInstr.Nanoseconds())/float64(b.N), "instrumented-ns/pair")
	b.ReportMetric(float64(tInstr)/float64(tPlain), "ratio")
}
