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

// PrimaryConn returns a connection to the primary serving key, for a WAIT,
// which counts the acknowledgements of its own connection's writes; Close
// returns it to its pool. Like a script call, it checks the server's
// version first (script.CheckServer): a connection is not checked alone.
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
