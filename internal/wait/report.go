package wait

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/observe"
)

// Reporting to a client's Observer: a handle keeps a Probe per way of
// acquiring; an acquire wraps itself in Begin and End, and the Report
// travels in ctx for Wait to report to (a non-blocking acquire reports its
// attempts with Attempt); a hold keeps a HoldReport. Without an Observer
// it all costs one atomic load per acquire or hold and allocates nothing.

// Probe is what a handle reports as: its client and its Op.
type Probe struct {
	rdb redis.UniversalClient
	op  observe.Op
}

// NewProbe returns the Probe of a handle of primitive (see observe.Op)
// called name on rdb.
func NewProbe(rdb redis.UniversalClient, primitive, name string) Probe {
	return Probe{rdb: rdb, op: observe.Op{Primitive: primitive, Name: name}}
}

// Report is the report of one acquire in progress; a nil *Report reports
// nothing.
type Report struct {
	a      observe.Acquire
	start  time.Time
	parked bool
}

type reportKey struct{}

// Begin begins the report of an acquire and returns the ctx it goes on
// with, which carries the report (and what the Observer adds, such as a
// span); ctx itself and nil without an Observer.
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

// ReportOf returns the report ctx carries, or nil.
func ReportOf(ctx context.Context) *Report {
	r, _ := ctx.Value(reportKey{}).(*Report)
	return r
}

// Attempt reports one run of an acquire script.
func (r *Report) Attempt(ctx context.Context, ok bool, err error) {
	if r != nil {
		r.a.Attempt(outcome(ctx, ok, err), err)
	}
}

// Park reports, once per acquire, that it has to wait.
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

// End reports how the acquire ended; a ctx that ended makes it Canceled.
func (r *Report) End(ctx context.Context, ok bool, err error) {
	if r != nil {
		r.a.End(outcome(ctx, ok, err), time.Since(r.start), err)
	}
}

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

// HoldReport is the report of one hold; a nil *HoldReport, one word in an
// unobserved hold, reports nothing.
type HoldReport struct {
	o     observe.Observer
	op    observe.Op
	since time.Time
}

// Hold begins the report of a hold taken by a script sent at sent; nil
// without an Observer.
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
