package perclient

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Unanswered wraps err, the error of a wait that ctx ended without a reply
// from Redis, with the error of a 100ms dial to rdb's server if that fails:
// until its retries give up (about half a second), go-redis tells a nearer
// deadline only ctx's error, so a short wait would not say why.
func Unanswered(err error, rdb redis.UniversalClient) error {
	var addrs []string
	network := "tcp"
	switch rdb := rdb.(type) {
	case *redis.Client:
		opt := rdb.Options()
		addrs, network = []string{opt.Addr}, cmp.Or(opt.Network, network)
	case *redis.ClusterClient:
		addrs = rdb.Options().Addrs
	}
	if len(addrs) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
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
