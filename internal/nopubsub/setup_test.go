package nopubsub_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// deployment is a server reached so that subscriptions are refused.
type deployment struct {
	name string
	// client returns a go-redis client of its own (as another process
	// would have), closed when t ends.
	client func(t *testing.T) *redis.Client
	// reach says how a process of its own reaches it (see dial), and
	// direct is the server's own address, for a test's bookkeeping.
	reach  reach
	direct string
}

// reach is how a client reaches a deployment: an address, the user and
// password, and whether a twemproxy is in between.
type reach struct {
	addr, user, password string
	proxy                bool
}

// args and parseReach carry a reach to a helper process.
func (r reach) args() []string {
	return []string{r.addr, r.user, r.password, strconv.FormatBool(r.proxy)}
}

func parseReach(a []string) reach {
	proxy, _ := strconv.ParseBool(a[3])
	return reach{addr: a[0], user: a[1], password: a[2], proxy: proxy}
}

// dial returns a client that reaches the deployment as r says, as a user
// would configure it (behind twemproxy: see redistest.HelloAnswering).
func (r reach) dial() *redis.Client {
	opt := &redis.Options{Addr: r.addr, Username: r.user, Password: r.password}
	if r.proxy {
		opt.Protocol, opt.DisableIdentity, opt.Dialer = 2, true, redistest.HelloAnswering(nil)
	}
	return redis.NewClient(opt)
}

// nutcracker starts a server and twemproxy in front of it: SUBSCRIBE
// (and INFO, bare TIME, SCRIPT LOAD) close the connection.
func nutcracker(t *testing.T) deployment {
	s := redistest.Start(t)
	nc := redistest.StartNutcracker(t, s)
	return deployment{name: "nutcracker", client: func(t *testing.T) *redis.Client { return nc.NewClient(t) },
		reach: reach{addr: nc.Addr(), proxy: true}, direct: s.Addr()}
}

// aclUser starts a server with a user that may run every command but
// those of pub/sub, on no channel: SUBSCRIBE is refused with NOPERM, and
// a PUBLISH inside a script raises an error.
func aclUser(t *testing.T) deployment {
	s := redistest.Start(t)
	admin := s.NewClient(t)
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "nopubsub", "on", ">pw", "~*", "+@all", "-@pubsub", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	return deployment{name: "acl", client: func(t *testing.T) *redis.Client {
		return s.NewClient(t, func(o *redis.Options) { o.Username, o.Password = "nopubsub", "pw" })
	}, reach: reach{addr: s.Addr(), user: "nopubsub", password: "pw"}, direct: s.Addr()}
}

// deployments runs f on each deployment, as a subtest that starts it.
func deployments(t *testing.T, f func(t *testing.T, d deployment)) {
	t.Run("nutcracker", func(t *testing.T) { f(t, nutcracker(t)) })
	t.Run("acl", func(t *testing.T) { f(t, aclUser(t)) })
}

// bounded returns a ctx that ends after d, or with t.
func bounded(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
