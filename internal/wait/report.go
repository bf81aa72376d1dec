package wait

import (
	"context"
	"errors"
	"github.com/redisync/redisync/internal/errs"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/observe"
)

// Reporting to the Observer of a client (package observe). A handle keeps
// a Probe per way of acquiring; an acquire begins a Report with it, which
// travels in ctx so that the wait loop reports attempts, parking and
// wake-ups to it; a hold keeps a HoldReport. Everything here is a no-op
// when the client has no Observer, and then costs one atomic load per
// acquire or hold and allocates nothing.
//
// For a new primitive: give its handle a Probe (NewProbe); wrap every
// acquire in Begin and End; report the attempts of a non-blocking acquire
// (TryLock-like) with Attempt. Blocking acquires go through Wait, which
// reports the rest. Holds kept by the hold engine report by themselves.

// Probe is what a handle reports as: its client and its Op.
type Probe struct {
	rdb redis.UniversalClient
	op  observe.Op
}

// NewProbe returns the Probe of a handle of primitive (see observe.Op)
// called name on rdb. It does no I/O.
func NewProbe(rdb redis.UniversalClient, primitive, name string) Probe {
	return Probe{rdb: rdb, op: observe.Op{Primitive: primitive, Name: name}}
}

// Report is the report of one acquire in progress. A nil *Report reports
// nothing: every method may be called on it.
type Report struct {
	a      observe.Acquire
	start  time.Time
	parked bool
}

type reportKey struct{}

// Begin begins the report of an acquire, blocking or not, and returns the
// ctx it goes on with, which carries the report (and whatever the
// Observer adds, such as a span); ctx itself and nil when the client has
// no Observer.
func (p Probe) Begin(ctx context.Context, blocking bool) (context.Context, *Report) {
	o := observe.Of(p.rdb)
	if o == nil {
		return ctx, nil
	}
	ctx, a := o.Acquire(ctx, p.op, blocking)
	if a == nil {
		return ctx, nil
	}
	r := &Report{a: a, start: time.Now()}
	return context.WithValue(ctx, reportKey{}, r), r
}

// ReportOf returns the report ctx carries; nil if none.
func ReportOf(ctx context.Context) *Report {
	r, _ := ctx.Value(reportKey{}).(*Report)
	return r
}

// Attempt reports one run of an acquire script: whether it acquired, and
// its error.
func (r *Report) Attempt(ctx context.Context, ok bool, err error) {
	if r != nil {
		r.a.Attempt(outcome(ctx, ok, err), err)
	}
}

// Park reports that the acquire has to wait; once per acquire.
func (r *Report) Park() {
	if r != nil && !r.parked {
		r.parked = true
		r.a.Park()
	}
}

// Wake reports that a parked acquire woke up, notified or not.
func (r *Report) Wake(notified bool) {
	if r != nil {
		r.a.Wake(notified)
	}
}

// End reports how the acquire ended: whether it acquired, and its error.
// ctx is the acquire's (a ctx that ended makes the outcome Canceled).
func (r *Report) End(ctx context.Context, ok bool, err error) {
	if r != nil {
		r.a.End(outcome(ctx, ok, err), time.Since(r.start), err)
	}
}

// outcome classifies the outcome of an attempt or an acquire.
func outcome(ctx context.Context, ok bool, err error) observe.Outcome {
	switch {
	case ok:
		return observe.Acquired
	case err == nil:
		return observe.Contended
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errs.CtxDone(ctx) != nil:
		return observe.Canceled
	}
	return observe.Failed
}

// HoldReport is the report of one hold. A nil *HoldReport reports
// nothing: a hold keeps a pointer, so that an unobserved hold carries one
// word for it.
type HoldReport struct {
	o     observe.Observer
	op    observe.Op
	since time.Time
}

// Hold begins the report of a hold taken by a script sent at sent; nil
// when the client has no Observer.
func (p Probe) Hold(sent time.Time) *HoldReport {
	o := observe.Of(p.rdb)
	if o == nil {
		return nil
	}
	return &HoldReport{o: o, op: p.op, since: sent}
}

// End reports that the hold ended, released or lost.
func (h *HoldReport) End() {
	if h != nil {
		h.o.Held(h.op, time.Since(h.since))
	}
}

// Lost reports that the hold was lost.
func (h *HoldReport) Lost() {
	if h != nil {
		h.o.Lost(h.op)
	}
}
