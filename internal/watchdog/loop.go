package watchdog

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// result is the outcome of one renewal.
type result struct {
	h    *Hold
	sent time.Time
	held bool
	err  error
	gone error // when the hold is gone: why, if the renewal said (see Entry.Renew)
}

// outcome is the result of renewing h at sent, as its check reported it:
// an error that wraps ErrGone says the hold is gone, and why.
func outcome(h *Hold, sent time.Time, held bool, err error) result {
	if errors.Is(err, ErrGone) {
		return result{h: h, sent: sent, gone: err}
	}
	return result{h: h, sent: sent, held: held, err: err}
}

// run is the watchdog goroutine. It returns when no hold is left, after
// cancelling and waiting for a renewal batch in flight.
func (w *Watchdog) run() {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var (
		inflight bool
		results  = make(chan []result, 1)
		batchEnd = make(chan struct{})
	)
	defer func() {
		cancel()
		if inflight {
			<-batchEnd
		}
	}()
	for {
		now := time.Now()
		due, lost, next, ok := w.scan(now, !inflight)
		if !ok {
			return
		}
		for _, l := range lost {
			l.e.Lost(ErrExpired)
		}
		if len(lost) > 0 {
			continue // look again: that may have been the last hold
		}
		if len(due) > 0 {
			inflight = true
			go func() {
				results <- w.renew(ctx, due)
				batchEnd <- struct{}{}
			}()
		}
		timer.Reset(max(next.Sub(now), time.Millisecond))
		select {
		case <-timer.C:
		case <-w.kick:
		case rs := <-results:
			<-batchEnd
			inflight = false
			w.apply(rs)
		}
	}
}

// scan finds the holds that have expired (removing them) and, when a batch
// may start, those due for renewal. It returns when to look again, and
// ok=false, marking the watchdog stopped, when no hold is left.
func (w *Watchdog) scan(now time.Time, mayRenew bool) (due, lost []*Hold, next time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.holds) == 0 {
		w.running = false
		return nil, nil, next, false
	}
	next = now.Add(time.Hour)
	var ripe []*Hold // at least half a period old: renewed with any due hold
	trigger := false
	for h := range w.holds {
		if !now.Before(h.validTill) {
			h.removed = true
			delete(w.holds, h)
			lost = append(lost, h)
			continue
		}
		next = minTime(next, h.validTill)
		if h.e.Renew == nil {
			continue
		}
		p := period(h.lease)
		age := now.Sub(h.lastSent)
		switch {
		case now.Before(h.retryAt):
			next = minTime(next, h.retryAt)
		case age >= p:
			trigger = true
			ripe = append(ripe, h)
		case age >= p/2:
			ripe = append(ripe, h)
			next = minTime(next, h.lastSent.Add(p))
		default:
			next = minTime(next, h.lastSent.Add(p))
		}
	}
	// A hold is renewed once a period has passed; holds at least half a
	// period old join its batch, so holds taken at different moments soon
	// share one batch. While a batch is in flight its results wake the loop.
	if trigger && mayRenew {
		due = ripe
	}
	return due, lost, next, true
}

// renew sends the renewals of due in pipelines and collects the outcomes.
func (w *Watchdog) renew(ctx context.Context, due []*Hold) []result {
	began := time.Now()
	out := make([]result, 0, len(due))
	for start := 0; start < len(due); start += batchSize {
		out = w.renewChunk(ctx, due[start:min(start+batchSize, len(due))], out)
	}
	w.report(out, time.Since(began))
	return out
}

// maxReloads bounds the rounds spent reloading scripts a server forgot.
const maxReloads = 8

// renewChunk renews one pipeline's worth of holds. A server that lost its
// script cache (restart, SCRIPT FLUSH, failover) answers NOSCRIPT: the first
// such hold is renewed alone, which falls back to EVAL and reloads the
// script, and the others are pipelined again.
func (w *Watchdog) renewChunk(ctx context.Context, chunk []*Hold, out []result) []result {
	for round := 0; len(chunk) > 0; round++ {
		sent := time.Now()
		if round == maxReloads {
			for _, h := range chunk { // give up batching: one by one
				held, err := h.e.Renew(ctx, w.rdb)()
				out = append(out, outcome(h, sent, held, err))
			}
			return out
		}
		pipe := w.rdb.Pipeline()
		checks := make([]func() (bool, error), len(chunk))
		for i, h := range chunk {
			checks[i] = h.e.Renew(ctx, pipe)
		}
		_, _ = pipe.Exec(ctx)
		var again []*Hold
		reloaded := false
		for i, h := range chunk {
			at := sent
			held, err := checks[i]()
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				if reloaded {
					again = append(again, h)
					continue
				}
				reloaded = true
				at = time.Now()
				held, err = h.e.Renew(ctx, w.rdb)() // EVAL: reloads the script
			}
			out = append(out, outcome(h, at, held, err))
		}
		chunk = again
	}
	return out
}

// apply records renewal outcomes and reports the holds found gone.
func (w *Watchdog) apply(rs []result) {
	var gone []result
	w.mu.Lock()
	for _, r := range rs {
		if r.h.removed {
			continue
		}
		switch {
		case r.err != nil:
			// Keep trying, paced, until the local validity runs out.
			r.h.retryAt = time.Now().Add(max(period(r.h.lease)/6, 20*time.Millisecond))
		case r.held:
			if r.sent.After(r.h.lastSent) {
				r.h.setSent(r.sent, r.h.e.Lease)
			}
		default:
			r.h.removed = true
			delete(w.holds, r.h)
			gone = append(gone, r)
		}
	}
	w.mu.Unlock()
	for _, r := range gone {
		r.h.e.Lost(cmp.Or(r.gone, ErrGone))
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
