package errs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// OutcomeUnknown reports whether a command that failed with err may have
// run: anything but a failure to connect or an error reply (which the
// scripts send before writing anything).
func OutcomeUnknown(err error) bool {
	if err == nil || errors.Is(err, redis.ErrPoolTimeout) {
		return false // nothing was sent
	}
	if errors.Is(err, ErrNotReplicated) {
		return false // undone already
	}
	var dial *net.OpError
	if errors.As(err, &dial) && dial.Op == "dial" {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// CtxErr makes err match ctx.Err() when ctx is done: go-redis reports a
// ctx deadline as an i/o timeout, like a network fault.
func CtxErr(ctx context.Context, err error) error {
	cerr := CtxDone(ctx)
	if err == nil || cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}

// CtxDone returns ctx.Err(), or DeadlineExceeded once the deadline passed:
// go-redis' network deadline can fire before ctx's timer.
func CtxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
