package internal

import (
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/watchdog"
	"github.com/redisync/redisync/pubsub"
)

// Client is the shared machinery of one Redis client: its pub/sub hub and
// its watchdog. Every handle built on the same redis client shares one.
type Client struct {
	RDB      redis.UniversalClient
	Hub      *pubsub.Hub
	Watchdog *watchdog.Watchdog
	refs     int // guarded by registryMu
}

var (
	registryMu sync.Mutex
	registry   = make(map[redis.UniversalClient]*Client)
)

// Sharded reports whether rdb notifies over sharded pub/sub (SPUBLISH and
// SSUBSCRIBE). That is the case on Redis Cluster, which redisync supports
// from Redis 7.0, the release that introduced sharded pub/sub.
func Sharded(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Acquire returns the shared Client of rdb, creating it on first use. Every
// Acquire must be paired with one Release; the entry is forgotten when the
// last user releases it, so nothing of the library stays attached to a
// client that nothing holds or waits on. Creating it does no I/O and starts
// no goroutine.
func Acquire(rdb redis.UniversalClient) *Client {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[rdb]
	if c == nil {
		c = &Client{RDB: rdb, Hub: pubsub.New(rdb, Sharded(rdb)), Watchdog: watchdog.New(rdb)}
		registry[rdb] = c
	}
	c.refs++
	return c
}

// Release gives back one reference taken by Acquire.
func (c *Client) Release() {
	registryMu.Lock()
	defer registryMu.Unlock()
	c.refs--
	if c.refs == 0 && registry[c.RDB] == c {
		delete(registry, c.RDB)
	}
}
