package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"
)

// bareGrantScript is the least a handoff through Redis does: one script
// gives a plain key to the waiter and publishes on its channel (sharded
// on a cluster).
var bareGrantScript = redis.NewScript(`
redis.call('set', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  redis.call('spublish', KEYS[2], ARGV[1])
else
  redis.call('publish', KEYS[2], ARGV[1])
end
return 1`)

// bareGrants is how many bare grants bench times.
const bareGrants = 50

// bareGrant measures, on the target, the floor of a handoff: a client
// runs bareGrantScript while a subscriber on another client waits for its
// message; timed from the script call to the message's arrival. It
// returns the median of bareGrants runs.
func bareGrant(ctx context.Context, a, b redis.UniversalClient, prefix string) (time.Duration, error) {
	key := prefix + "bare-grant:{" + prefix + "}" // key and channel share a slot
	channel := key + ":chan"
	sharded := perclient.Sharded(a)
	var ps *redis.PubSub
	if sharded {
		ps = b.SSubscribe(ctx, channel)
	} else {
		ps = b.Subscribe(ctx, channel)
	}
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		return 0, err
	}
	msgs := ps.Channel()
	lat := make([]time.Duration, 0, bareGrants)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for range bareGrants {
		timer.Reset(5 * time.Second)
		start := time.Now()
		if err := bareGrantScript.Run(ctx, a, []string{key, channel}, "waiter", scriptFlag(sharded)).Err(); err != nil {
			return 0, err
		}
		select {
		case <-msgs:
		case <-timer.C:
			return 0, fmt.Errorf("bare grant: no message within 5s")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

// scriptFlag encodes a boolean script argument.
func scriptFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
