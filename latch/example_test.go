package latch_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/latch"
)

// A coordinator waits for a batch of three jobs, which could run in as
// many processes: each counts the latch down when done.
func Example() {
	mr, err := miniredis.Run() // any Redis 7+ server works the same way
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	// A wait ends only when ctx does: give it a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	batch := latch.New(rdb, "nightly-import")
	if ok, err := batch.TrySetCount(ctx, 3); !ok || err != nil {
		fmt.Println("a batch is still running:", ok, err)
		return
	}

	var wg sync.WaitGroup
	for job := range 3 {
		wg.Go(func() {
			// ... import part job of the data, then:
			if err := latch.New(rdb, "nightly-import").CountDown(ctx); err != nil {
				fmt.Println("job", job, "count down:", err)
			}
		})
	}

	if err := batch.Wait(ctx); err != nil { // ctx's deadline bounds the wait
		fmt.Println("wait:", err)
		return
	}
	n, _ := batch.Count(ctx)
	fmt.Println("batch done; count:", n)
	ok, _ := batch.TrySetCount(ctx, 2)
	fmt.Println("next batch may start:", ok)
	wg.Wait()
	// Output:
	// batch done; count: 0
	// next batch may start: true
}
