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

// Unanswered wraps err, the error of a wait that ctx ended without a reply
// from Redis, with the error of one brief dial to h's server when that
// fails: until its retries give up (about half a second), go-redis tells a
// nearer deadline only ctx's error, so a short wait would not say why.
func Unanswered(err error, h *hub.Hub) error {
	var rdb redis.UniversalClient
	registryMu.Lock()
	for r, c := range registry {
		if c.Hub == h {
			rdb = r
		}
	}
	registryMu.Unlock()
	var addrs []string
	network := "tcp"
	switch rdb := rdb.(type) {
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
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var d net.Dialer
	var why error
	for _, addr := range addrs {
		var conn net.Conn
		if conn, why = d.DialContext(ctx, network, addr); why == nil {
			_ = conn.Close()
			return err // reachable: err says enough
		}
	}
	return fmt.Errorf("%w (no reply from Redis: %w)", err, why)
}
