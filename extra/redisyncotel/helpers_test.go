package redisyncotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// rig is an instrumented client with the real SDK behind it: a manual
// metric reader and a span recorder.
type rig struct {
	rdb    *redis.Client
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T, opts ...redisyncotel.Option) *rig {
	t.Helper()
	r := &rig{
		rdb:    redistest.SharedServer(t).NewClient(t),
		reader: sdkmetric.NewManualReader(),
		spans:  tracetest.NewSpanRecorder(),
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = r.tp.Shutdown(context.Background())
	})
	opts = append([]redisyncotel.Option{redisyncotel.WithMeterProvider(mp), redisyncotel.WithTracerProvider(r.tp)}, opts...)
	if err := redisyncotel.Instrument(r.rdb, opts...); err != nil {
		t.Fatal(err)
	}
	return r
}

// collect reads every metric now.
func (r *rig) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// kv is the attributes a data point must have (others may be there too).
type kv map[string]string

func (want kv) match(set attribute.Set) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.AsString() != v {
			return false
		}
	}
	return true
}

// count returns, for metric name, the sum of the counter's data points
// or the count of the histogram's that have the attributes want.
func (r *rig) count(t *testing.T, name string, want kv) int64 {
	t.Helper()
	var n int64
	switch d := r.collect(t)[name].Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if want.match(p.Attributes) {
				n += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if want.match(p.Attributes) {
				n += int64(p.Count)
			}
		}
	case nil:
	default:
		t.Fatalf("%s: unexpected data %T", name, d)
	}
	return n
}

// waitCount waits until count(name, want) is n.
func (r *rig) waitCount(t *testing.T, name string, want kv, n int64) {
	t.Helper()
	redistest.WaitFor(t, 10*time.Second, func() bool { return r.count(t, name, want) == n })
}

// ended returns the recorded spans called name.
func (r *rig) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// events returns the names of s's events, with their redisync.outcome or
// redisync.wake attribute when they have one: "attempt:contended".
func events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		name := e.Name
		for _, a := range e.Attributes {
			if a.Key == redisyncotel.AttrOutcome || a.Key == "redisync.wake" {
				name += ":" + a.Value.AsString()
			}
		}
		out = append(out, name)
	}
	return out
}

// parked returns two handles on one new rlock: a holds it, and b's Lock
// with ctx is parked (the waiters gauge says so) and returns on done.
func (r *rig) parked(t *testing.T, ctx context.Context) (a, b *rlock.Mutex, done <-chan error) {
	t.Helper()
	name := redistest.UniqueName(t)
	a, b = rlock.New(r.rdb, name), rlock.New(r.rdb, name)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- b.Lock(ctx) }()
	r.waitCount(t, redisyncotel.MetricWaiters, kv{redisyncotel.AttrPrimitive: "rlock"}, 1)
	return a, b, errs
}
