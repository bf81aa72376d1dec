package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Traffic is a go-redis hook that counts what a client sends: round trips
// (a command or a whole pipeline counts one) and commands.
type Traffic struct{ trips, cmds atomic.Int64 }

// CountTraffic installs a Traffic hook on rdb.
func CountTraffic(rdb *redis.Client) *Traffic {
	c := &Traffic{}
	rdb.AddHook(c)
	return c
}

// RoundTrips returns the round trips sent so far.
func (c *Traffic) RoundTrips() int64 { return c.trips.Load() }

// Commands returns the commands sent so far, those in pipelines included.
func (c *Traffic) Commands() int64 { return c.cmds.Load() }

func (c *Traffic) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *Traffic) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (c *Traffic) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
