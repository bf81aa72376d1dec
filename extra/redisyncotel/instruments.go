package redisyncotel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// Metric names, as in the package doc.
const (
	MetricAcquireDuration  = "redisync.acquire.duration"
	MetricAcquireAttempts  = "redisync.acquire.attempts"
	MetricHoldDuration     = "redisync.hold.duration"
	MetricLost             = "redisync.lost"
	MetricWaiters          = "redisync.waiters"
	MetricRenewals         = "redisync.watchdog.renewals"
	MetricRenewalDuration  = "redisync.watchdog.duration"
	MetricPubSubConns      = "redisync.pubsub.connections"
	MetricPubSubReconnects = "redisync.pubsub.reconnects"
)

// Attribute keys.
const (
	AttrPrimitive = "redisync.primitive"
	AttrOutcome   = "redisync.outcome"
	AttrName      = "redisync.name"
)

// Bucket boundaries, in seconds. OpenTelemetry's default boundaries are
// meant for milliseconds (0, 5, 10, ... 10000) and would put every wait
// under 5s in one bucket.
var (
	// An uncontended acquire is a round trip (well under a millisecond on
	// a local network); a contended one lasts as long as a hold.
	acquireBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// Holds last from a round trip to minutes (a batch job's lock).
	holdBounds = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// A renewal batch is a pipelined round trip or a few; it must stay far
	// below a third of the lease (10s by default).
	renewalBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
)

// instruments are the metrics of one instrumented client.
type instruments struct {
	acquireDuration metric.Float64Histogram
	attempts        metric.Int64Counter
	holdDuration    metric.Float64Histogram
	lost            metric.Int64Counter
	waiters         metric.Int64UpDownCounter
	renewals        metric.Int64Counter
	renewalDuration metric.Float64Histogram
	conns           metric.Int64UpDownCounter
	reconnects      metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	b := builder{m: m}
	ins := instruments{
		acquireDuration: b.histogram(MetricAcquireDuration, acquireBounds,
			"How long acquires took, blocking or not, by outcome (acquired, contended, canceled, error)."),
		attempts: b.counter(MetricAcquireAttempts, "{attempt}",
			"Acquire script runs, by the outcome of each run."),
		holdDuration: b.histogram(MetricHoldDuration, holdBounds,
			"How long holds lasted, from acquisition to release or loss."),
		lost: b.counter(MetricLost, "{hold}",
			"Holds lost rather than released: the lease ran out, or the lock was taken over."),
		waiters: b.upDown(MetricWaiters, "{waiter}",
			"Blocking acquires waiting now: refused once, or behind other goroutines of their handle."),
		renewals: b.counter(MetricRenewals, "{hold}",
			"Holds the watchdog renewed, by outcome (ok, lost, error)."),
		renewalDuration: b.histogram(MetricRenewalDuration, renewalBounds,
			"How long one batch of the watchdog's renewals took."),
		conns: b.upDown(MetricPubSubConns, "{connection}",
			"Open pub/sub connections that carry wake-ups."),
		reconnects: b.counter(MetricPubSubReconnects, "{reconnect}",
			"Pub/sub connections that broke and came back."),
	}
	return ins, b.err
}

// builder makes instruments, keeping the errors of all of them.
type builder struct {
	m   metric.Meter
	err error
}

// histogram makes a histogram of seconds with the given bucket bounds.
func (b *builder) histogram(name string, bounds []float64, desc string) metric.Float64Histogram {
	h, err := b.m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(bounds...))
	b.err = errors.Join(b.err, err)
	return h
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = errors.Join(b.err, err)
	return c
}

func (b *builder) upDown(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := b.m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.err = errors.Join(b.err, err)
	return c
}
