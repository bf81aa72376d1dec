package perclient

import (
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/watchdog"
)

// Client is the shared machinery of one Redis client: its pub/sub hub, its
// watchdog, the keeper of its waiters' places and the tidier of what
// callers that gave up left to clean up (see Tidy). Every handle built on
// the same redis client shares one.
type Client struct {
	RDB      redis.UniversalClient
	Hub      *hub.Hub
	Watchdog *watchdog.Watchdog
	keeper   *keeper     // keeps the places of parked waiters (see Keep)
	tidier   *tidier     // runs the clean-ups of callers that gave up (see Tidy)
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

// Attach returns the shared Client of rdb, creating it on first use, for a
// hold or a wait that uses it. Every Attach must be paired with one
// Detach; the entry is forgotten clientLinger after the last user
// detached, so nothing of the library stays attached to a client that
// nothing holds or waits on. Creating it does no I/O and starts no
// goroutine. (It counts users of the machinery; it takes no lock.)
func Attach(rdb redis.UniversalClient) *Client {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[rdb]
	if c == nil {
		c = &Client{RDB: rdb, Hub: hub.New(rdb, Sharded(rdb)), Watchdog: watchdog.New(rdb), keeper: newKeeper(rdb), tidier: newTidier()}
		registry[rdb] = c
	}
	c.refs++
	return c
}

// Detach gives back one use taken by Attach.
func (c *Client) Detach() {
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
