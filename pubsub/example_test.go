package pubsub_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/pubsub"
)

// A hub wakes as many local waiters as a message names.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	hub := pubsub.New(rdb, false)
	var subs []*pubsub.Subscription
	for range 3 {
		s, err := hub.Subscribe(ctx, "jobs") // returns once Redis confirmed it
		if err != nil {
			panic(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}

	rdb.Publish(ctx, "jobs", "1") // one waiter may proceed
	<-subs[0].C()                 // the longest-waiting one is woken
	fmt.Println("first waiter woken")

	rdb.Publish(ctx, "jobs", "-1") // everyone may proceed
	for _, s := range subs {
		<-s.C()
	}
	fmt.Println("all waiters woken")
	// Output:
	// first waiter woken
	// all waiters woken
}
