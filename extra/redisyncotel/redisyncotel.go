// Package redisyncotel reports what the redisync primitives do as
// OpenTelemetry metrics and spans.
//
//	err := redisyncotel.Instrument(rdb)
//
// makes every redisync primitive on rdb (rlock, rwlock, fairlock,
// semaphore, and any other built on redisync's engine) report, through
// the global MeterProvider and TracerProvider unless WithMeterProvider and
// WithTracerProvider name others. It uses the OpenTelemetry API only: the
// application installs the SDK and its exporters (Prometheus through
// OpenTelemetry's Prometheus exporter, OTLP, stdout).
//
// Metrics (attribute redisync.primitive: rlock, rwlock.read, rwlock.write,
// fairlock, semaphore, leased, latch, multilock, election; redisync.outcome where it
// applies; durations in seconds):
//
//   - redisync.acquire.duration (histogram, s): how long an acquire took,
//     blocking or not, by outcome: acquired, contended (a non-blocking
//     acquire found it taken), canceled (ctx ended first), error.
//   - redisync.acquire.attempts (counter): acquire script runs, by the
//     outcome of each run: acquired, contended, canceled, error.
//   - redisync.hold.duration (histogram, s): how long holds lasted, from
//     acquisition to release or loss.
//   - redisync.lost (counter): holds lost rather than released.
//   - redisync.waiters (up-down counter): blocking acquires parked now.
//   - redisync.watchdog.renewals (counter): holds renewed by the watchdog,
//     by outcome ok, lost or error; no primitive (one batch mixes them).
//   - redisync.watchdog.duration (histogram, s): one renewal batch's round
//     trip.
//   - redisync.pubsub.connections (up-down counter): open wake-up
//     connections.
//   - redisync.pubsub.reconnects (counter): wake-up connections that broke
//     and came back.
//
// Lock names are unbounded, so they become an attribute (redisync.name)
// only with WithNames.
//
// Spans: every blocking acquire (Lock, RLock, Do, a semaphore's Acquire)
// is a span named redisync.<primitive>.acquire, a child of the span in
// its ctx, with an event for each attempt (its outcome), for parking, and
// for each wake-up (notified, or timer when a sleep ran out), and an
// error status when it fails. The scripts it runs carry it in their ctx,
// so a go-redis instrumentation's command spans become its children.
//
// The instrumentation lives as long as the client and does not keep it
// reachable: once the application drops a client, it is collected as if
// it had never been instrumented. Instrumenting the same client twice is
// an error.
package redisyncotel

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/observe"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/redisync/redisync/extra/redisyncotel"

// ErrInstrumented is matched by the error of Instrument for a client
// that is instrumented already.
var ErrInstrumented = observe.ErrAttached

// Option configures Instrument.
type Option func(*config)

type config struct {
	mp    metric.MeterProvider
	tp    trace.TracerProvider
	names bool
}

// WithMeterProvider makes the metrics go to mp. The default is the global
// MeterProvider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithTracerProvider makes the spans go to tp. The default is the global
// TracerProvider (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithNames adds the primitive's name as attribute redisync.name to every
// metric and span. Names are as many as the application makes, and a
// metrics backend keeps a series per name: use it when the names are
// few. The default is no names.
func WithNames() Option {
	return func(c *config) { c.names = true }
}

// Instrument makes every redisync primitive on rdb report metrics and
// spans from now on. It does no I/O. It returns an error matching
// ErrInstrumented when rdb is instrumented already, and an error when an
// instrument cannot be created or rdb is of a type it does not know
// (*redis.Client, *redis.ClusterClient and *redis.Ring are known).
func Instrument(rdb redis.UniversalClient, opts ...Option) error {
	if rdb == nil {
		return errors.New("redisyncotel: Instrument with nil client")
	}
	cfg := config{}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	o, err := newObserver(cfg)
	if err != nil {
		return fmt.Errorf("redisyncotel: %w", err)
	}
	if err := observe.Attach(rdb, o); err != nil {
		return fmt.Errorf("redisyncotel: instrument: %w", err)
	}
	return nil
}
