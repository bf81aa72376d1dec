package perclient

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
)

// probeTimeout bounds the dial that tells why a wait got no reply.
const probeTimeout = 100 * time.Millisecond

// whyUnanswered is the reason a wait that ended with ctx never got a reply
// from Redis, when Redis cannot be reached: the error of one dial to its
// address, bounded by probeTimeout, or nil when the dial succeeds (or the
// client is unknown). go-redis dials in the background and, until its own
// retries give up (about half a second against a port nothing listens
// on), reports only the ctx's error to a caller whose deadline is nearer:
// without this, a short wait with Redis down would not say why it failed.
func whyUnanswered(h *hub.Hub) error {
	var addrs []string
	network := "tcp"
	switch rdb := clientOf(h).(type) {
	case *redis.Client:
		opt := rdb.Options()
		addrs = []string{opt.Addr}
		if opt.Network != "" {
			network = opt.Network
		}
	case *redis.ClusterClient:
		addrs = rdb.Options().Addrs
	}
	if len(addrs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var d net.Dialer
	var err error
	for _, addr := range addrs {
		var conn net.Conn
		if conn, err = d.DialContext(ctx, network, addr); err == nil {
			_ = conn.Close()
			return nil // reachable: the wait's own error says enough
		}
	}
	return err
}

// clientOf returns the Redis client whose Client owns h, or nil.
func clientOf(h *hub.Hub) redis.UniversalClient {
	if h == nil {
		return nil
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for rdb, c := range registry {
		if c.Hub == h {
			return rdb
		}
	}
	return nil
}

// Unanswered wraps err, the error of a wait that never got a reply, with
// the reason whyUnanswered finds, if any.
func Unanswered(err error, h *hub.Hub) error {
	if why := whyUnanswered(h); why != nil {
		return fmt.Errorf("%w (no reply from Redis: %w)", err, why)
	}
	return err
}
