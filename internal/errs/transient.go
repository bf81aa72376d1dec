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

// transientReplies are Redis error replies that go away by themselves: a
// server loading its data, a replica that was a primary a moment ago, a
// cluster reconfiguring, a script running long.
var transientReplies = []string{"LOADING", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "NOREPLICAS"}

// Transient reports whether err may succeed when retried later: connection
// failures (refused, reset, closed by the peer, timed out, no free
// connection in the pool) and the transient Redis replies above. Anything
// else is permanent: a wrong type or other error reply, a closed client, a
// cancelled ctx, and every error of the library itself (an upgrade
// attempt, an acquisition the replicas did not acknowledge).
//
// A failed network operation (net.OpError) is transient even when it
// matches context.DeadlineExceeded, as the net package's timeouts do: a
// dial that timed out (a host that drops packets, during a failover say)
// must not end a wait whose ctx runs on. Every caller checks its ctx on
// its own.
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
		// Any other reply is a definite answer from a working server.
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
