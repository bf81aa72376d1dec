package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/rwlock"
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

	reader1 := rwlock.New(rdb, "catalog")
	reader2 := rwlock.New(rdb, "catalog") // another handle: another owner
	writer := rwlock.New(rdb, "catalog")

	_ = reader1.RLock(ctx)
	_ = reader2.RLock(ctx)
	fmt.Println("two readers inside")

	ok, _ := writer.TryLock(ctx)
	fmt.Println("writer got it while they read:", ok)

	_ = reader1.RUnlock(ctx)
	_ = reader2.RUnlock(ctx)
	ok, _ = writer.TryLock(ctx)
	fmt.Println("writer got it after they left:", ok)

	ok, _ = reader1.TryRLock(ctx)
	fmt.Println("reader got it while the writer writes:", ok)
	_ = writer.Unlock(ctx)
	// Output:
	// two readers inside
	// writer got it while they read: false
	// writer got it after they left: true
	// reader got it while the writer writes: false
}

// A writer may take a read lock with its write hold's ctx and keep it
// after the write Unlock; a read hold's ctx cannot become the writer.
func ExampleRWMutex_downgrade() {
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

	rw := rwlock.New(rdb, "prices")
	_ = rw.Do(ctx, func(ctx context.Context) error {
		// ... write the new prices, then keep reading them:
		return rw.RLock(ctx)
	})

	other := rwlock.New(rdb, "prices")
	ok, _ := other.TryRLock(ctx)
	fmt.Println("other readers may join:", ok)
	_ = other.RUnlock(ctx)
	_ = rw.RUnlock(ctx)

	_ = rw.RDo(ctx, func(ctx context.Context) error {
		err := rw.Lock(ctx) // an upgrade would wait for itself
		fmt.Println(errors.Is(err, rwlock.ErrUpgradeNotSupported))
		fmt.Println(err)
		return nil
	})
	// Output:
	// other readers may join: true
	// true
	// rwlock: lock "prices": upgrade from read to write lock not supported
}
