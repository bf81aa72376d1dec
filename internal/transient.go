package internal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// transientReplies are the error replies with which Redis refuses a command
// for a while: loading its data after a restart, a replica or demoted
// primary during a failover, a cluster reconfiguring, a busy script.
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY"}

// Transient reports whether err may go away by itself, so that a blocking
// call should retry rather than give up: the connection failed or timed
// out, or Redis refused the command for a while (see transientReplies).
// Other error replies, a closed client, context errors and
// ErrNotReplicated are not transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, redis.ErrClosed) || errors.Is(err, ErrNotReplicated) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		for _, p := range transientReplies {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}

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
	cerr := ctx.Err()
	if err == nil || cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}
