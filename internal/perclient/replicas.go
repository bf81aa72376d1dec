package perclient

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// CanPin reports whether PrimaryConn works with rdb.
func CanPin(rdb redis.UniversalClient) bool {
	switch rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
		return true
	}
	return false
}

// PrimaryConn returns a connection of rdb to the primary that serves key,
// for commands that must share one connection: WAIT counts the replicas
// that acknowledged the writes of the connection it is sent on. A
// *redis.Client (a Sentinel FailoverClient too) gives one of its own; a
// *redis.ClusterClient one of the client of the key's primary. Close
// returns it to its pool.
//
// It checks the server's version first (script.CheckServer), as a script
// call on rdb does: a connection is not checked on its own.
func PrimaryConn(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Conn, error) {
	if err := script.CheckServer(ctx, rdb); err != nil {
		return nil, err
	}
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Conn(), nil
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return node.Conn(), nil
	}
	return nil, fmt.Errorf("cannot pin a connection of a %T", rdb)
}
