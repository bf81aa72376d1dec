package internal

import (
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/watchdog"
)

// Client is the shared machinery of one Redis client: its pub/sub hub and
// its watchdog. Every handle built on the same redis client shares one.
type Client struct {
	RDB      redis.UniversalClient
	Hub      *hub.Hub
	Watchdog *watchdog.Watchdog
	refs     int         // guarded by registryMu
	idle     *time.Timer // guarded by registryMu: forgets the entry once idle for clientLinger
}

// clientLinger is how long the registry keeps a Client nothing uses any
// more, so that a loop of Lock and Unlock reuses its hub and watchdog
// instead of building them anew for every hold. A kept Client runs no
// goroutine.
const clientLinger = time.Second

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
// Acquire must be paired with one Release; the entry is forgotten
// clientLinger after the last user released it, so nothing of the library
// stays attached to a client that nothing holds or waits on. Creating it
// does no I/O and starts no goroutine.
func Acquire(rdb redis.UniversalClient) *Client {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[rdb]
	if c == nil {
		c = &Client{RDB: rdb, Hub: hub.New(rdb, Sharded(rdb)), Watchdog: watchdog.New(rdb)}
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
	if c.refs > 0 {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(clientLinger, c.forget)
	} else {
		c.idle.Reset(clientLinger)
	}
}

// forget drops c from the registry if nothing has used it since its timer
// was armed.
func (c *Client) forget() {
	registryMu.Lock()
	defer registryMu.Unlock()
	if c.refs == 0 && registry[c.RDB] == c {
		delete(registry, c.RDB)
	}
}
