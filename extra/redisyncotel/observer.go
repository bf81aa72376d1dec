package redisyncotel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync/observe"
)

// observer turns the reports of package observe into metrics and spans.
type observer struct {
	ins    instruments
	tracer trace.Tracer
	names  bool

	// The attribute sets of each primitive, made once: a measurement with
	// a ready set allocates nothing for its attributes.
	mu         sync.RWMutex // guards primitives
	primitives map[string]*primitive

	renewed [3]metric.MeasurementOption // by outcome ok, lost, error
}

// primitive is what every report of one primitive shares.
type primitive struct {
	attrs    metric.MeasurementOption    // redisync.primitive
	outcomes [4]metric.MeasurementOption // and redisync.outcome, by observe.Outcome
	kv       attribute.KeyValue          // redisync.primitive, for spans
	span     string                      // redisync.<primitive>.acquire
	start    []trace.SpanStartOption     // the span's options, without the name
}

// Span event names and attributes.
const (
	eventAttempt = "attempt"
	eventPark    = "park"
	eventWake    = "wake-up"
	attrWake     = "redisync.wake" // notified | timer
)

var (
	wokeNotified = trace.WithAttributes(attribute.String(attrWake, "notified"))
	wokeByTimer  = trace.WithAttributes(attribute.String(attrWake, "timer"))
	outcomeKVs   = [4]attribute.KeyValue{
		observe.Acquired:  attribute.String(AttrOutcome, observe.Acquired.String()),
		observe.Contended: attribute.String(AttrOutcome, observe.Contended.String()),
		observe.Canceled:  attribute.String(AttrOutcome, observe.Canceled.String()),
		observe.Failed:    attribute.String(AttrOutcome, observe.Failed.String()),
	}
	attemptEvents [4]trace.EventOption // by observe.Outcome
)

func init() {
	for i, kv := range outcomeKVs {
		attemptEvents[i] = trace.WithAttributes(kv)
	}
}

func newObserver(cfg config) (*observer, error) {
	ins, err := newInstruments(cfg.mp.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	o := &observer{
		ins:        ins,
		tracer:     cfg.tp.Tracer(ScopeName),
		names:      cfg.names,
		primitives: make(map[string]*primitive),
	}
	for i, v := range []string{"ok", "lost", "error"} {
		o.renewed[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrOutcome, v)))
	}
	return o, nil
}

// primitive returns the shared attributes of the primitive called name.
func (o *observer) primitive(name string) *primitive {
	o.mu.RLock()
	p := o.primitives[name]
	o.mu.RUnlock()
	if p != nil {
		return p
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if p = o.primitives[name]; p != nil {
		return p
	}
	kv := attribute.String(AttrPrimitive, name)
	p = &primitive{
		attrs: metric.WithAttributeSet(attribute.NewSet(kv)), kv: kv, span: "redisync." + name + ".acquire",
		start: []trace.SpanStartOption{trace.WithAttributes(kv), trace.WithSpanKind(trace.SpanKindInternal)},
	}
	for i, out := range outcomeKVs {
		p.outcomes[i] = metric.WithAttributeSet(attribute.NewSet(kv, out))
	}
	o.primitives[name] = p
	return p
}

// attrs returns the attributes of a measurement about op: its primitive's
// set, with the name when asked for (WithNames).
func (o *observer) attrs(op observe.Op) metric.MeasurementOption {
	p := o.primitive(op.Primitive)
	if !o.names {
		return p.attrs
	}
	return metric.WithAttributes(p.kv, attribute.String(AttrName, op.Name))
}

// withOutcome is attrs with the outcome out.
func (o *observer) withOutcome(op observe.Op, out observe.Outcome) metric.MeasurementOption {
	p := o.primitive(op.Primitive)
	if !o.names {
		return p.outcomes[out]
	}
	return metric.WithAttributes(p.kv, outcomeKVs[out], attribute.String(AttrName, op.Name))
}

// Acquire begins the report of an acquire. Its measurements are recorded
// with the caller's ctx, not with the acquire's span: an SDK that samples
// exemplars links them to the caller's trace when that is sampled, and a
// span of every acquire would double what the metrics cost with
// exemplars on.
func (o *observer) Acquire(ctx context.Context, op observe.Op, blocking bool) (context.Context, observe.Acquire) {
	a := &acquire{o: o, op: op, ctx: ctx}
	if blocking {
		p := o.primitive(op.Primitive)
		start := p.start
		if o.names {
			start = append(start[:len(start):len(start)], trace.WithAttributes(attribute.String(AttrName, op.Name)))
		}
		ctx, a.span = o.tracer.Start(ctx, p.span, start...)
	}
	return ctx, a
}

func (o *observer) Held(op observe.Op, d time.Duration) {
	o.ins.holdDuration.Record(context.Background(), d.Seconds(), o.attrs(op))
}

func (o *observer) Lost(op observe.Op) {
	o.ins.lost.Add(context.Background(), 1, o.attrs(op))
}

func (o *observer) Renewed(r observe.Renewal) {
	ctx := context.Background()
	for i, n := range [3]int{r.OK, r.Lost, r.Failed} {
		if n > 0 {
			o.ins.renewals.Add(ctx, int64(n), o.renewed[i])
		}
	}
	o.ins.renewalDuration.Record(ctx, r.Duration.Seconds())
}

func (o *observer) PubSub(e observe.Event) {
	ctx := context.Background()
	switch e {
	case observe.ConnOpened:
		o.ins.conns.Add(ctx, 1)
	case observe.ConnClosed:
		o.ins.conns.Add(ctx, -1)
	case observe.Reconnected:
		o.ins.reconnects.Add(ctx, 1)
	}
}

// acquire is the report of one acquire; its span is nil unless it blocks.
//
// The span's first attempt event is held back until the acquire turns out
// not to be a plain success: an acquire whose first attempt succeeds (the
// uncontended Lock, the common case) has a span without events, which
// spares it most of what a span costs beyond its start and end.
type acquire struct {
	o      *observer
	op     observe.Op
	ctx    context.Context // the caller's
	span   trace.Span
	parked bool

	attempts int
	first    observe.Outcome // of the first attempt, while held back
	firstAt  time.Time
}

func (a *acquire) Attempt(out observe.Outcome, _ error) {
	a.o.ins.attempts.Add(a.ctx, 1, a.o.withOutcome(a.op, out))
	if a.span == nil {
		return
	}
	a.attempts++
	if a.attempts == 1 {
		a.first, a.firstAt = out, time.Now()
		return
	}
	a.flush()
	a.span.AddEvent(eventAttempt, attemptEvents[out])
}

// flush adds the first attempt's event, if it was held back.
func (a *acquire) flush() {
	if a.attempts == 1 {
		a.span.AddEvent(eventAttempt, attemptEvents[a.first], trace.WithTimestamp(a.firstAt))
		a.attempts++ // added: no second time
	}
}

func (a *acquire) Park() {
	a.parked = true
	a.o.ins.waiters.Add(a.ctx, 1, a.o.attrs(a.op))
	if a.span != nil {
		a.flush()
		a.span.AddEvent(eventPark)
	}
}

func (a *acquire) Wake(notified bool) {
	if a.span == nil {
		return
	}
	if notified {
		a.span.AddEvent(eventWake, wokeNotified)
	} else {
		a.span.AddEvent(eventWake, wokeByTimer)
	}
}

func (a *acquire) End(out observe.Outcome, d time.Duration, err error) {
	if a.parked {
		a.o.ins.waiters.Add(a.ctx, -1, a.o.attrs(a.op))
	}
	a.o.ins.acquireDuration.Record(a.ctx, d.Seconds(), a.o.withOutcome(a.op, out))
	if a.span == nil {
		return
	}
	if out != observe.Acquired {
		// A success is the span's normal end; a failure says which.
		a.flush()
		a.span.SetAttributes(outcomeKVs[out])
		if err != nil {
			a.span.RecordError(err)
			a.span.SetStatus(codes.Error, err.Error())
		} else {
			a.span.SetStatus(codes.Error, out.String())
		}
	}
	a.span.End()
}
