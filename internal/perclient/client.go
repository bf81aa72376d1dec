package perclient

import (
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/watchdog"
)

// Client is the machinery every handle built on one redis client shares.
type Client struct {
	RDB      redis.UniversalClient
	Hub      *hub.Hub
	Watchdog *watchdog.Watchdog
	keeper   *keeper
	tidier   *tidier
	refs     int         // guarded by registryMu
	idle     *time.Timer // guarded by registryMu: forgets the entry after clientLinger
}

// clientLinger is how long an unused Client stays, for a loop of Lock and
// Unlock to reuse.
const clientLinger = time.Second

var (
	registryMu sync.Mutex
	registry   = make(map[redis.UniversalClient]*Client)
)

// Sharded reports whether rdb notifies over sharded pub/sub (Cluster).
func Sharded(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Attach returns the shared Client of rdb, creating it (without I/O or
// goroutine) on first use; pair it with one Detach.
func Attach(rdb redis.UniversalClient) *Client {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[rdb]
	if c == nil {
		c = &Client{RDB: rdb, Hub: hub.New(rdb, Sharded(rdb)), Watchdog: watchdog.New(rdb), keeper: newKeeper(rdb), tidier: &tidier{}}
		registry[rdb] = c
	}
	c.refs++
	return c
}

// Detach gives back one use taken by Attach.
func (c *Client) Detach() {
	registryMu.Lock()
	defer registryMu.Unlock()
	if c.refs--; c.refs > 0 {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(clientLinger, c.forget)
	} else {
		c.idle.Reset(clientLinger)
	}
}

func (c *Client) forget() {
	registryMu.Lock()
	defer registryMu.Unlock()
	if c.refs == 0 && registry[c.RDB] == c {
		delete(registry, c.RDB)
	}
}
