package multilock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/internal"
)

// round is the outcome of one attempt on every member of a quorum.
type round struct {
	taken     []int   // members locked in this round
	errs      []error // members' errors
	permanent int     // errors that trying again will not cure
	elapsed   time.Duration
}

// won reports whether the round reached a majority within the budget.
func (g *Group) won(r round) bool {
	return len(r.taken) >= g.need && r.elapsed <= g.budget
}

// round tries every member at once, each attempt bounded by the budget: a
// server that has not answered by then could not count, and the member
// gives back what a late grant took (the engine's rule for an attempt cut
// short by ctx).
func (g *Group) round(ctx context.Context) round {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, g.budget)
	defer cancel()
	oks := make([]bool, len(g.members))
	errs := make([]error, len(g.members))
	var wg sync.WaitGroup
	for i, m := range g.members {
		wg.Go(func() { oks[i], errs[i] = m.TryLock(rctx) })
	}
	wg.Wait()
	r := round{elapsed: time.Since(start)}
	for i, err := range errs {
		switch {
		case err == nil && oks[i]:
			r.taken = append(r.taken, i)
		case err == nil:
		case ctx.Err() == nil && rctx.Err() != nil:
			r.errs = append(r.errs, fmt.Errorf("no answer within %v: %w", g.budget, err))
		default:
			r.errs = append(r.errs, err)
			if ctx.Err() == nil && !internal.Transient(err) {
				r.permanent++
			}
		}
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
	errs := errors.Join(r.errs...)
	switch {
	case internal.CtxDone(ctx) != nil:
		return false, internal.CtxErr(ctx, errs)
	case errs != nil && len(r.taken)+len(r.errs) >= g.need:
		return false, errs // the failed members would have made a majority
	case len(r.taken) >= g.need:
		return false, fmt.Errorf("a majority took %v, more than the %v a hold may spend acquiring", r.elapsed.Round(time.Millisecond), g.budget)
	}
	return false, nil
}

// lockQuorum makes rounds until one wins or ctx ends. After the first
// round it missed, it watches every member that announces its releases
// (redisync's rlock and rwlock), then makes a round at once, so a release
// between the two is not missed; after later misses it sleeps until a
// member is released, or a randomized delay (see RetryDelay). A member
// error ends the wait only when such errors leave too few members for a
// majority; otherwise it is retried, and reported if ctx ends first.
func (g *Group) lockQuorum(ctx context.Context) error {
	var w *waking
	defer func() { w.close() }()
	for {
		r := g.round(ctx)
		if g.settle(ctx, r) {
			return nil
		}
		errs := errors.Join(r.errs...)
		if err := internal.CtxDone(ctx); err != nil {
			return lastAttempt(err, errs)
		}
		if r.permanent > len(g.members)-g.need {
			return errs
		}
		if w == nil {
			w = g.subscribe(ctx)
			continue
		}
		if err := w.sleep(ctx); err != nil {
			return lastAttempt(err, errs)
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
