package redisyncotel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/rlock"
)

func Example() {
	mr, err := miniredis.Run() // any Redis 7+ server works the same way
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	// The application's SDK: here an in-memory reader; in production a
	// Prometheus or OTLP exporter (see docs/instrumentation.md).
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	if err := redisyncotel.Instrument(rdb, redisyncotel.WithMeterProvider(mp)); err != nil {
		panic(err)
	}
	m := rlock.New(rdb, "orders:42")
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if ok, _ := rlock.New(rdb, "orders:42").TryLock(ctx); ok {
		panic("locked twice")
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			fmt.Printf("%s (%s): %s\n", metric.Name, metric.Unit, counts(metric.Data))
		}
	}
	// Output:
	// redisync.acquire.duration (s): redisync.outcome=acquired redisync.primitive=rlock 1, redisync.outcome=contended redisync.primitive=rlock 1
	// redisync.acquire.attempts ({attempt}): redisync.outcome=acquired redisync.primitive=rlock 1, redisync.outcome=contended redisync.primitive=rlock 1
	// redisync.hold.duration (s): redisync.primitive=rlock 1
}

// counts prints how many measurements each data point holds, with its
// attributes, in a stable order.
func counts(data metricdata.Aggregation) string {
	var out []string
	add := func(attrs []string, n int64) { out = append(out, fmt.Sprintf("%s %d", strings.Join(attrs, " "), n)) }
	switch d := data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			add(values(p.Attributes.ToSlice()), int64(p.Count))
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			add(values(p.Attributes.ToSlice()), p.Value)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func values(kvs []attribute.KeyValue) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, string(kv.Key)+"="+kv.Value.AsString())
	}
	return out
}
