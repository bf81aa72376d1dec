package nopubsub_test

import (
	"context"
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
}

// nutcracker starts a server and twemproxy in front of it: SUBSCRIBE
// (and INFO, bare TIME, SCRIPT LOAD) close the connection.
func nutcracker(t *testing.T) deployment {
	s := redistest.Start(t)
	nc := redistest.StartNutcracker(t, s)
	return deployment{name: "nutcracker", client: func(t *testing.T) *redis.Client { return nc.NewClient(t) }}
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
	}}
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
