package rlock_test

import (
	"context"
	"fmt"

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
	ctx := context.Background()

	m := rlock.New(rdb, "orders:42")
	if err := m.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("locked")

	other := rlock.New(rdb, "orders:42") // another handle: another owner
	ok, _ := other.TryLock(ctx)
	fmt.Println("other handle got it:", ok)

	if err := m.Unlock(ctx); err != nil {
		fmt.Println("unlock:", err)
	}
	ok, _ = other.TryLock(ctx)
	fmt.Println("after unlock, other handle got it:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// locked
	// other handle got it: false
	// after unlock, other handle got it: true
}
