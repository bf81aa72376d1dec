package internal

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// transientReplies are Redis error replies that go away by themselves: a
// server loading its data, a replica that was a primary a moment ago, a
// cluster reconfiguring, a script running long.
var transientReplies = []string{"LOADING", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "NOREPLICAS"}

// Transient reports whether err may succeed when retried later: connection
// failures and the transient Redis replies above. Permanent errors (a wrong
// type, a closed client, a cancelled ctx, an acquisition the replicas did
// not acknowledge) are not transient.
func Transient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, ErrNotReplicated):
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
	// Connection refused or reset, timeouts, a pool exhausted: the server
	// may be back in a moment.
	return true
}
