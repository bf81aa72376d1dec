package election

import (
	"context"

	"github.com/redisync/redisync/internal/hold"
)

// Run campaigns with value (see Campaign) and, once the handle leads,
// runs fn with a ctx that is cancelled when the leadership ends: lost (the
// watchdog found it gone, or could not renew it in time, which it learns
// before the lease runs out on the server and another candidate can lead),
// or resigned. When fn returns, Run resigns. A nil return, or any return
// after the leadership was lost, campaigns again; an error returned while
// leading ends Run with that error. Run returns an error wrapping ctx's
// when ctx ends, and any error of a campaign (the name holds another
// primitive's data, a value over MaxValueSize).
//
// fn should return soon after its ctx is cancelled: until it does, the
// process may still act as leader while another candidate leads. Terms
// strictly increase from one leader to the next (see Term), so a resource
// that remembers the highest term it has seen can refuse the writes of a
// stale leader. After a loss Redis may still have the handle's leadership
// (a renewal held back by a stall ran after the handle gave up on it):
// the next campaign then finds it and leads again at once, in the same
// term, with fn's previous run over.
func (e *Election) Run(ctx context.Context, value string, fn func(ctx context.Context) error) error {
	if err := checkValue(value); err != nil {
		return e.wrap("run", err)
	}
	cctx := e.with(ctx, value)
	for {
		var ended bool // the leadership ended while fn ran
		err := e.l.Do(cctx, hold.Exclusive, func(lctx context.Context) error {
			err := fn(lctx)
			ended = lctx.Err() != nil && ctx.Err() == nil
			return err
		})
		switch {
		case ctx.Err() != nil && (err == nil || ended):
			return e.wrap("run", ctx.Err())
		case err != nil && !ended:
			return err
		}
	}
}
