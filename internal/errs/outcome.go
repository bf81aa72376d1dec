package errs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// OutcomeUnknown reports whether a command that failed with err may still
// have run on the server: anything but a failure to connect, or an error
// reply, which Redis sends instead of running the command (or, for
// redisync's scripts, before they write anything).
func OutcomeUnknown(err error) bool {
	if err == nil || errors.Is(err, redis.ErrPoolTimeout) {
		return false // no connection: nothing was sent
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

// CtxErr returns err, made to match ctx.Err() with errors.Is when ctx is
// done: go-redis reports a ctx deadline that cut a command short as an
// i/o timeout, which callers could not tell from a network fault.
func CtxErr(ctx context.Context, err error) error {
	cerr := CtxDone(ctx)
	if err == nil || cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}

// CtxDone returns ctx.Err(), or context.DeadlineExceeded once ctx's
// deadline has passed though ctx has not noticed yet: the network deadline
// go-redis derives from ctx's can fire a moment before ctx's own timer, and
// a loop that retries until ctx is done must not take that moment for
// more time.
func CtxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
