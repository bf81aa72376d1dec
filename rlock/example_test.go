package rlock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rlock"
)

func Example() {
	mr, err := miniredis.Run() // any Redis 7+ server works the same way
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	// A wait ends only when ctx does: give it a deadline, or a Lock made
	// while Redis is down or the address is wrong waits until Redis answers.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// One handle, shared by the goroutines of a service the way a
	// sync.Mutex field is: they exclude each other, and every process
	// using "orders:42" too.
	m := rlock.New(rdb, "orders:42")
	stock := 10
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := m.Lock(ctx); err != nil {
				return
			}
			defer m.Unlock(ctx) // frees the lock even if ctx was cancelled
			stock--
		})
	}
	wg.Wait()
	fmt.Println("stock:", stock)

	// Re-entry travels in ctx: Do hands fn a ctx that carries the hold,
	// and Lock with it goes one level deeper instead of waiting.
	_ = m.Do(ctx, func(ctx context.Context) error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		n, _ := m.HoldCount(ctx)
		fmt.Println("levels:", n)
		return m.Unlock(ctx)
	})

	other := rlock.New(rdb, "orders:42") // another owner, as another process would be
	ok, _ := other.TryLock(ctx)
	fmt.Println("free again:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// stock: 6
	// levels: 2
	// free again: true
}
