package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
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

	s := semaphore.New(rdb, "db-slots")
	if _, err := s.TrySetPermits(ctx, 3); err != nil { // only the first caller sets it
		fmt.Println("set permits:", err)
		return
	}
	if err := s.Acquire(ctx, 2); err != nil {
		fmt.Println("acquire:", err)
		return
	}
	avail, _ := s.Available(ctx)
	fmt.Println("available while holding 2:", avail)

	ok, _ := s.TryAcquire(ctx, 2)
	fmt.Println("2 more at once:", ok)

	_ = s.Release(ctx, 2)
	avail, _ = s.Available(ctx)
	fmt.Println("available after release:", avail)
	// Output:
	// available while holding 2: 1
	// 2 more at once: false
	// available after release: 3
}

func ExampleLeased() {
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

	l := semaphore.NewLeased(rdb, "workers")
	_ = l.SetPermits(ctx, 2)

	// Lease 0: the watchdog keeps the permit alive until Release, and a
	// crashed process loses it after the watchdog timeout.
	kept, err := l.Acquire(ctx, 0)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer l.Release(ctx, kept)

	// A fixed lease: the permit returns to the pool a minute later unless
	// renewed or released.
	id, ok, _ := l.TryAcquire(ctx, time.Minute)
	fmt.Println("second permit:", ok)
	_, ok, _ = l.TryAcquire(ctx, time.Minute)
	fmt.Println("third permit:", ok)

	renewed, _ := l.Renew(ctx, id, 2*time.Minute)
	fmt.Println("renewed:", renewed)
	fmt.Println("release:", l.Release(ctx, id))
	err = l.Release(ctx, id)
	fmt.Println("release again is ErrNotHeld:", errors.Is(err, semaphore.ErrNotHeld))
	// Output:
	// second permit: true
	// third permit: false
	// renewed: true
	// release: <nil>
	// release again is ErrNotHeld: true
}
