package fairlock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
)

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

	// One handle, shared by goroutines the way a sync.Mutex is: they take
	// turns in the order they asked, and so do other processes.
	m := fairlock.New(rdb, "jobs")
	done := 0
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := m.Lock(ctx); err != nil {
				return
			}
			defer m.Unlock(ctx)
			done++
		})
	}
	wg.Wait()
	fmt.Println("jobs done:", done)

	other := fairlock.New(rdb, "jobs") // another owner, as another process would be
	ok, _ := other.TryLock(ctx)
	fmt.Println("free again:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// jobs done: 3
	// free again: true
}

// Waiters get the lock in the order in which they joined the line.
func Example_firstComeFirstServed() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	// A wait ends only when ctx does: give it a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	holder := fairlock.New(rdb, "printer")
	if err := holder.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	var served []string // appended while holding the lock
	var wg sync.WaitGroup
	for i, who := range []string{"ann", "bob", "cid"} {
		m := fairlock.New(rdb, "printer", fairlock.WithWaiterTimeout(5*time.Second))
		wg.Go(func() {
			if err := m.Lock(ctx); err != nil {
				fmt.Println("lock:", err)
				return
			}
			served = append(served, who)
			_ = m.Unlock(ctx)
		})
		// Let each join the line before the next comes (the line is the
		// list redisync:{printer}:queue).
		for rdb.LLen(ctx, "redisync:{printer}:queue").Val() != int64(i+1) {
			time.Sleep(time.Millisecond)
		}
	}
	if ok, _ := fairlock.New(rdb, "printer").TryLock(ctx); !ok {
		fmt.Println("a newcomer cannot jump the line")
	}
	_ = holder.Unlock(ctx)
	wg.Wait()
	fmt.Println(served)
	// Output:
	// a newcomer cannot jump the line
	// [ann bob cid]
}
