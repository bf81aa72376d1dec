package script_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// The wrappers take Go values and return decoded replies. Queued on a
// pipeline, a call is decoded after Exec; there it cannot fall back to EVAL
// on NOSCRIPT, so run it once directly first (as the watchdog does).
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	keys := script.LockKeys{Lock: "redisync:{job}", Fence: "redisync:{job}:fence", Queue: "redisync:{job}:queue", Places: "redisync:{job}:place:", Channel: "redisync:{job}:chan"}
	got, err := script.ReentrantTake(ctx, rdb, keys, script.TakeArgs{ID: "owner-a:1", Lease: 10 * time.Second, Deadline: time.Now().Add(5 * time.Second).UnixMilli(), Placed: true}).Result()
	fmt.Println(got.OK, got.Holds, err)

	other, _ := script.ReentrantTake(ctx, rdb, keys, script.TakeArgs{ID: "owner-b:1", Lease: 10 * time.Second, Deadline: time.Now().Add(5 * time.Second).UnixMilli(), Placed: true}).Result()
	fmt.Println(other.OK, other.Wait > 0)

	fmt.Println(script.ReentrantRenew(ctx, rdb, keys.Lock, "owner-a:1", 10*time.Second).Result())
	// Output:
	// true 1 <nil>
	// false true
	// true <nil>
}
