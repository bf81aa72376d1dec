package multilock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/multilock"
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
	// A wait ends only when ctx does: give it a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A transfer locks both accounts. Transfers in opposite directions
	// name them in opposite order, and still cannot deadlock: a group
	// takes its locks in the order of their names.
	balance := map[string]int{"alice": 100, "bob": 100}
	transfer := func(from, to string, amount int) error {
		g := multilock.New(rlock.New(rdb, "account:"+from), rlock.New(rdb, "account:"+to))
		if err := g.Lock(ctx); err != nil {
			return err
		}
		defer g.Unlock(ctx)
		balance[from] -= amount
		balance[to] += amount
		return nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { _ = transfer("alice", "bob", 5) })
		wg.Go(func() { _ = transfer("bob", "alice", 3) })
	}
	wg.Wait()
	fmt.Println("alice:", balance["alice"], "bob:", balance["bob"])
	// Output:
	// alice: 80 bob: 120
}

func ExampleNewQuorum() {
	// Three independent servers: the lock holds while a majority of them
	// grant it, so it outlives the loss of any one.
	var locks []multilock.Locker
	for range 3 {
		mr, err := miniredis.Run()
		if err != nil {
			panic(err)
		}
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		locks = append(locks, rlock.New(rdb, "nightly-report"))
	}
	q := multilock.NewQuorum(locks...)
	// A wait ends only when ctx does: give it a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("held by a majority")
	if err := q.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// held by a majority
}
