package redisyncotel_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	rso "github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/observe"
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
// reports the median time of each and their ratio (instrumented/plain):
// medians, because on a shared machine a few pairs take many times the
// usual, and a mean follows them.
func BenchmarkOverhead(b *testing.B) {
	plain := rlock.New(redistest.SharedServer(b).NewClient(b), redistest.UniqueName(b))
	instrumented := rlock.New(instrumentedClient(b), redistest.UniqueName(b))
	var tPlain, tInstr []time.Duration
	timed := func(m *rlock.Mutex, times *[]time.Duration) {
		start := time.Now()
		lockUnlock(b, m)
		*times = append(*times, time.Since(start))
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
	p, i := median(tPlain), median(tInstr)
	b.ReportMetric(float64(p.Nanoseconds()), "plain-ns/pair")
	b.ReportMetric(float64(i.Nanoseconds()), "instrumented-ns/pair")
	b.ReportMetric(float64(i)/float64(p), "ratio")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkReports is what the instrumentation itself costs for one
// uncontended Lock+Unlock pair, without Redis: the reports the engine
// makes (a blocking acquire that succeeds at its first attempt, and the
// end of its hold) into the SDK.
func BenchmarkReports(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	defer mp.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())
	if err := rso.Instrument(rdb, rso.WithMeterProvider(mp), rso.WithTracerProvider(tp)); err != nil {
		b.Fatal(err)
	}
	o := observe.Of(rdb)
	op := observe.Op{Primitive: "rlock", Name: "bench"}
	ctx := context.Background()
	for b.Loop() {
		_, a := o.Acquire(ctx, op, true)
		a.Attempt(observe.Acquired, nil)
		a.End(observe.Acquired, time.Millisecond, nil)
		o.Held(op, time.Millisecond)
	}
}
