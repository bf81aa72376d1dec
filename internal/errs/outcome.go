package errs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
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

// transientReplies are error replies that go away by themselves.
var transientReplies = []string{"LOADING", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "NOREPLICAS"}

// Transient reports whether err may succeed later: connection failures and
// transientReplies. A net.OpError is transient even when it matches
// DeadlineExceeded: a dial timeout must not end a wait whose ctx runs on.
func Transient(err error) bool {
	var op *net.OpError
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, ErrStaleReply), errors.As(err, &op):
		return true
	case errors.Is(err, context.DeadlineExceeded):
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
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout)
}
