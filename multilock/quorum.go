package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
)

// round is the outcome of one attempt on every member of a quorum.
type round struct {
	taken     []int   // members locked in this round
	refused   []int   // members held by someone else
	errs      []error // members' errors
	permanent int     // errors that trying again will not cure
	// majority is when the grant that made a majority arrived, counted
	// from the round's start; total is when the last attempt returned (an
	// attempt cut short by the budget may first undo what it sent).
	majority, total time.Duration
}

// won reports whether the round reached a majority within the budget, and
// every fixed lease it took still has time left (see validity.go).
func (g *Group) won(r round) bool {
	return len(r.taken) >= g.need && r.majority <= g.budget &&
		(g.fixed == 0 || r.total+drift(g.fixed) < g.fixed)
}

// round tries every member at once, each attempt bounded by the budget: a
// server that has not answered by then could not count. It listens until
// every member has answered, or a majority granted and the rest had as
// long again (at least minGrace) to join it (a hold on more members than
// the majority survives more failures), or the budget is spent. Once a
// majority is out of reach it cuts the other attempts short and listens
// on, so that what they took is given back before the round ends.
//
// It does not wait for a straggler (a redisync member on a silent network
// returns only when its client's read timeout fires): the attempt
// finishes on its own goroutine, which ends with it; its ctx is done by
// then, so the member gives back a late grant (the engine's rule), and
// should a Locker of another library report one nonetheless, the
// goroutine releases it.
func (g *Group) round(ctx context.Context) round {
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, g.budget)
	defer cancel()
	answers := make(chan answer, len(g.members))
	var mu sync.Mutex // guards late
	late := false     // the round has stopped listening
	for i, m := range g.members {
		go func() {
			ok, err := m.TryLock(actx)
			mu.Lock()
			unheard := late
			if !unheard {
				answers <- answer{i: i, ok: ok, err: err, at: time.Since(start)}
			}
			mu.Unlock()
			if unheard && ok {
				_ = g.release(ctx, []int{i})
			}
		}()
	}
	got := g.listen(ctx, start, answers, cancel)
	mu.Lock()
	late = true
	mu.Unlock()
	for len(answers) > 0 {
		got = append(got, <-answers)
	}
	r := g.tally(ctx, got)
	r.total = time.Since(start)
	return r
}

// minGrace is the least a round waits for the rest of the members once a
// majority has granted.
const minGrace = 20 * time.Millisecond

// listen collects a round's answers until the round is over (see round);
// giveUp cuts the attempts short. When ctx ends it listens on for at most
// hold.CleanupTimeout, so that a cancelled Lock returns once its attempts
// have returned (each leaves what it must give back to the background,
// bounded: see hold.Tracker.Undo), or a silent server has had that long.
func (g *Group) listen(ctx context.Context, start time.Time, answers <-chan answer, giveUp func()) []answer {
	budget := time.NewTimer(g.budget - time.Since(start))
	defer budget.Stop()
	var got []answer
	var granted, failed int
	var grace <-chan time.Time
	done := ctx.Done()
	for len(got) < len(g.members) {
		select {
		case a := <-answers:
			got = append(got, a)
			if a.ok && a.err == nil {
				granted++
			} else {
				failed++
			}
			if failed > len(g.members)-g.need {
				giveUp()
			}
			if granted == g.need && grace == nil {
				t := time.NewTimer(max(time.Since(start), minGrace))
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			return got
		case <-budget.C:
			return got
		case <-done:
			// The attempts end now, leaving what they took to be given
			// back: wait for them to return.
			done = nil
			budget.Reset(min(g.budget-time.Since(start), hold.CleanupTimeout))
		}
	}
	return got
}

// answer is one member's answer in a round.
type answer struct {
	i   int
	ok  bool
	err error
	at  time.Duration // since the round began
}

// tally sums up a round's answers; members that did not answer count as
// failed for want of time.
func (g *Group) tally(ctx context.Context, got []answer) round {
	var r round
	var granted []time.Duration
	answered := make([]bool, len(g.members))
	for _, a := range got {
		answered[a.i] = true
		switch {
		case a.err == nil && a.ok:
			r.taken = append(r.taken, a.i)
			granted = append(granted, a.at)
		case a.err == nil:
			r.refused = append(r.refused, a.i)
		case errs.CtxDone(ctx) == nil && errors.Is(a.err, context.DeadlineExceeded):
			// The round's budget ran out, not the caller's ctx.
			r.errs = append(r.errs, fmt.Errorf("no answer within %v: %w", g.budget, a.err))
		default:
			r.errs = append(r.errs, a.err)
			if errs.CtxDone(ctx) == nil && !errs.Transient(a.err) {
				r.permanent++
			}
		}
	}
	for i, ok := range answered {
		if !ok {
			r.errs = append(r.errs, fmt.Errorf("%q: no answer within %v", g.members[i].Name(), g.budget))
		}
	}
	if len(granted) >= g.need {
		slices.Sort(granted)
		r.majority = granted[g.need-1]
	}
	return r
}

// settle keeps the round's members as a level of the group when it won,
// else gives them back, and reports whether it kept them.
func (g *Group) settle(ctx context.Context, r round) bool {
	if g.won(r) && g.keep(r.taken) {
		return true
	}
	// Errors of the give-back are the members' to report: what could
	// not be given back expires with its lease.
	_ = g.release(ctx, r.taken)
	return false
}

// tryQuorum makes one round.
func (g *Group) tryQuorum(ctx context.Context) (bool, error) {
	r := g.round(ctx)
	if g.settle(ctx, r) {
		return true, nil
	}
	failed := errors.Join(r.errs...)
	switch {
	case errs.CtxDone(ctx) != nil:
		return false, errs.CtxErr(ctx, failed)
	case failed != nil && len(r.taken)+len(r.errs) >= g.need:
		return false, failed // the failed members would have made a majority
	case len(r.taken) >= g.need:
		return false, fmt.Errorf("a majority took %v (the round %v), more than a hold may spend acquiring", r.majority.Round(time.Millisecond), r.total.Round(time.Millisecond))
	}
	return false, nil
}

// lockQuorum makes rounds until one wins or ctx ends. After the first
// round it missed, it watches every member that announces its releases
// (redisync's rlock and rwlock), then makes a round at once, so a release
// between the two is not missed; after later misses it sleeps until a
// member is released, or a randomized delay (see retryDelay). A member
// error ends the wait only when such errors leave too few members for a
// majority; otherwise it is retried, and reported if ctx ends first.
func (g *Group) lockQuorum(ctx context.Context) error {
	var w *waking
	defer func() { w.close() }()
	var failed error // of the last round that ctx did not cut short, if any
	for {
		r := g.round(ctx)
		if g.settle(ctx, r) {
			return nil
		}
		if err := errs.CtxDone(ctx); err != nil {
			if failed == nil {
				failed = errors.Join(r.errs...) // the first round: what it saw
			}
			return lastAttempt(err, failed)
		}
		failed = errors.Join(r.errs...)
		if r.permanent > len(g.members)-g.need {
			return failed
		}
		if w == nil {
			w = g.subscribe(ctx)
			continue
		}
		if err := w.sleep(ctx, r.refused); err != nil {
			return lastAttempt(err, failed)
		}
	}
}

// lastAttempt is the error of a wait that ctx ended: ctx's error, and why
// the last round failed, if members failed (a wait that fails says why).
func lastAttempt(err, errs error) error {
	if errs == nil {
		return err
	}
	return fmt.Errorf("%w (last attempt: %w)", err, errs)
}
