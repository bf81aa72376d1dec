package errs

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

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
