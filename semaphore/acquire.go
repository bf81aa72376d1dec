package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"

	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// Acquire takes n permits, waiting until n are available at once or ctx is
// done. Acquiring 0 permits succeeds at once; a negative n is an error, as
// is one above 2^53 - 1 ([ErrOutOfRange]). On
// failure Acquire returns an error wrapping ctx.Err() or the Redis error
// and leaves the semaphore unchanged: if a take was in flight when ctx
// ended or its reply was lost, whatever it took is given back. A take
// whose reply arrives after ctx ended is given back too, and Acquire
// returns the ctx error: the caller has moved on.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if err := checkPermits(n); err != nil {
		return s.wrap("acquire", err)
	}
	if n == 0 {
		return nil
	}
	r := &request{n: n, receipt: s.receipt()}
	c := perclient.Attach(s.rdb)
	defer c.Detach()
	actx, report := s.probe.Begin(ctx, true)
	// A release that frees fewer than n permits wakes a local waiter that
	// needs no more than that, not this one.
	need := int(min(n, maxAnnounced))
	err := wait.Waiter{Client: c, Channel: s.keys.Channel, MaxSleep: s.cfg.pollInterval, Need: need}.Wait(actx,
		func(ctx context.Context) (bool, time.Duration, error) {
			ok, err := s.attempt(ctx, r)
			return ok, 0, err // no lease bounds the wait: the poll interval does
		})
	report.End(ctx, err == nil, err)
	if err != nil && (r.unsure || r.cancelling) {
		// A script of the request had an unknown outcome, or took
		// permits after ctx ended, and no cancellation of it went
		// through: try once more, or a take that went through, or a
		// copy still on its way, keeps the permits taken.
		_ = s.cancel(ctx, r)
	}
	if err != nil && r.unset {
		err = fmt.Errorf("%w: %w", err, errUnset)
	}
	return s.wrap("acquire", err)
}

// TryAcquire makes one attempt to take n permits and reports whether it
// did: false and no error when fewer than n are available. Acquiring 0
// permits succeeds; a negative n is an error, as is one above 2^53 - 1
// ([ErrOutOfRange]). As with Acquire, a take
// whose outcome is unknown, or whose reply arrives after ctx ended, is
// given back, and TryAcquire returns an error.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (bool, error) {
	if err := checkPermits(n); err != nil {
		return false, s.wrap("acquire", err)
	}
	if n == 0 {
		return true, nil
	}
	actx, report := s.probe.Begin(ctx, false)
	ok, err := s.attempt(actx, &request{n: n, receipt: s.receipt()})
	err = errs.CtxErr(ctx, err)
	report.Attempt(ctx, ok, err)
	report.End(ctx, ok, err)
	return ok, s.wrap("acquire", err)
}

// errUnset tells a waiter why it waited in vain on a semaphore that never
// had a permit count (a new name, or a Redis restarted without
// persistence).
var errUnset = errors.New("no permits set: call SetPermits or TrySetPermits")

// maxAnnounced caps the permit count a notification carries (see
// semaphore_release.lua): a waiter for more is woken by any notification
// that announces the cap.
const maxAnnounced = 1_000_000

// request is one Acquire or TryAcquire of n permits. Its attempts run
// under one receipt until the request is cancelled; then it goes on as a
// new request, under a new receipt (see settled.go for their lifetime).
type request struct {
	n       int64
	receipt string
	unsure  bool // a script under receipt had an unknown outcome: never settle it
	unset   bool // the last attempt found no permit count at all
	// cancelling is set when an undo of receipt failed: a copy of it may
	// still run (within its deadline), and would give back the permits
	// that an attempt under the receipt reported taken. So no attempt
	// runs under it again: the undo is sent again first.
	cancelling bool
}

// attempt runs the acquire script once for request r.
func (s *Semaphore) attempt(ctx context.Context, r *request) (bool, error) {
	s.repay(ctx)
	if r.cancelling {
		// An undo of the request failed, and a copy of it may still
		// run: an attempt under the receipt that reported the permits
		// taken would have them given back under its caller. Send the
		// undo again (it acts once) and go on under a new receipt.
		if err := s.cancel(ctx, r); err != nil {
			return false, err
		}
	}
	var res script.Taken
	err := s.withSettled(func(settled []string) error {
		return s.inTime(r.receipt, func(req script.Request) (err error) {
			res, err = script.SemaphoreAcquire(ctx, s.rdb, s.keys, req, r.n, settled).Result()
			return err
		})
	})
	switch {
	case err != nil:
		if errs.OutcomeUnknown(err) {
			// The script may have run without its reply reaching us:
			// cancel the request, giving back what it took. If the
			// cancellation fails, the next attempt sends it again.
			// (A script that never reached Redis, or was answered
			// with an error, took nothing.)
			r.unsure = true
			_ = s.cancel(ctx, r)
		}
		return false, err
	case res.Cancelled:
		// A cancellation whose reply was lost went through: go on as a
		// new request, which nothing has cancelled.
		s.renew(r)
		return s.attempt(ctx, r)
	case !res.OK:
		r.unset = res.Unset
		return false, nil
	}
	if err := errs.CtxDone(ctx); err != nil {
		// The reply came after ctx ended, and the caller has moved on:
		// give the permits back (the rule of every blocking acquire).
		_ = s.cancel(ctx, r)
		return false, err
	}
	if !r.unsure {
		s.settled.add(r.receipt)
	}
	return true, nil
}

// cancel cancels request r, giving back what it took, and starts it anew
// under a new receipt. When the cancellation fails, r keeps its receipt,
// marked cancelling: its next attempt sends the cancellation again before
// anything else, never the acquire script under that receipt. (An
// attempt that found the permits the request took and reported them
// taken would have them given back under its caller by a copy of the
// failed cancellation that Redis runs after it, within its deadline.)
// cancel returns the cancellation's error.
//
// The cancellation runs without ctx's cancellation, for at most
// cleanupTimeout, but is waited for only until ctx is done: a caller
// whose ctx ended returns at once, and the cancellation finishes in the
// background (perclient.TidyUp). r then goes on under a new receipt, and
// the old one is never settled (the cancellation may run yet): it
// expires by itself.
func (s *Semaphore) cancel(ctx context.Context, r *request) error {
	receipt := r.receipt
	var err error
	if !perclient.TidyUp(ctx, s.rdb, cleanupTimeout, func(ctx context.Context) {
		if err = s.undo(ctx, receipt); err != nil {
			s.owed.add(receipt)
		}
	}) {
		r.unsure = true
		s.renew(r)
		return ctx.Err()
	}
	if err != nil {
		r.unsure = r.unsure || errs.OutcomeUnknown(err)
		r.cancelling = true
		return err
	}
	s.renew(r)
	return nil
}

// renew starts r anew under a new receipt, once the outcome of the old
// one is final. The old receipt is settled unless a script under it had
// an unknown outcome (see settled.go).
func (s *Semaphore) renew(r *request) {
	if !r.unsure {
		s.settled.add(r.receipt)
	}
	r.receipt, r.unsure, r.cancelling = s.receipt(), false, false
}

// repay sends again the cancellations that failed (see cancel), before
// the handle's next acquire or release: the request they cancel may have
// ended with an error (a TryAcquire, an Acquire whose ctx ended), and
// what it took would otherwise stay taken. A cancellation acts once, so
// sending it for a request that also sends it again itself is harmless.
// One that fails again stays owed.
func (s *Semaphore) repay(ctx context.Context) {
	for _, receipt := range s.owed.take() {
		if err := s.undo(ctx, receipt); err != nil {
			s.owed.add(receipt)
		}
	}
}

// undo cancels the request of receipt. The receipt makes it exact: permits
// are given back only if the request took them, and a request still on its
// way takes nothing.
func (s *Semaphore) undo(ctx context.Context, receipt string) error {
	return s.withSettled(func(settled []string) error {
		return s.inTime(receipt, func(req script.Request) error {
			_, err := script.SemaphoreUndo(ctx, s.rdb, s.keys, req, s.sharded, settled).Result()
			return err
		})
	})
}

// inTime runs one script of the acquire request of receipt, with a
// deadline of its own (see exactly.RequestWindow): a copy of the script
// that Redis runs after it changes nothing, and the receipt, which every
// run that writes it makes live an hour past its deadline, keeps every
// copy that runs in time from taking twice. When Redis refused the script
// as late (the server's clock is not where this client thought it was),
// nothing changed: inTime learns the server's clock and runs it once more.
func (s *Semaphore) inTime(receipt string, run func(req script.Request) error) error {
	return exactly.InTime(&s.clock, func(deadline int64) error {
		return run(script.Request{Receipt: receipt, TTL: acquireReceiptTTL, Deadline: deadline})
	})
}

// receipt returns the receipt key of a new acquire request.
func (s *Semaphore) receipt() string {
	return s.names.Receipt(keyspace.ReceiptAcquire, keyspace.NewRequestID())
}
