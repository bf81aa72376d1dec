package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
)

func Example() {
	mr, err := miniredis.Run() // any Redis 7+ server works the same way
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Three instances of a scheduler, each a handle of its own as each
	// process would have: one leads, the others wait in line.
	instances := []*election.Election{
		election.New(rdb, "report-scheduler"),
		election.New(rdb, "report-scheduler"),
		election.New(rdb, "report-scheduler"),
	}
	changes := instances[0].Observe(ctx) // anyone may watch
	won := make([]chan error, len(instances))
	campaign := func(i int) {
		won[i] = make(chan error, 1)
		go func() { won[i] <- instances[i].Campaign(ctx, fmt.Sprintf("host-%d:8080", i)) }()
	}
	campaign(0)
	first := <-changes
	fmt.Println("leader:", first.Value)
	for i := 1; i < len(instances); i++ {
		campaign(i)
		// Let each join the line before the next comes.
		for rdb.LLen(ctx, "redisync:{report-scheduler}:queue").Val() != int64(i) {
			time.Sleep(time.Millisecond)
		}
	}

	// The leader steps down: the next in line leads at once, in a
	// higher term. (An observer may hear of a new leader before that
	// leader's own Campaign has returned; a candidate acts as the leader
	// only once it has.)
	if err := <-won[0]; err != nil {
		panic(err)
	}
	if err := instances[0].Resign(ctx); err != nil {
		panic(err)
	}
	next := <-changes
	fmt.Println("leader:", next.Value, "higher term:", next.Term > first.Term)

	if err := <-won[1]; err != nil {
		panic(err)
	}
	if err := instances[1].Proclaim(ctx, "host-1:9090"); err != nil {
		panic(err)
	}
	fmt.Println("leader:", (<-changes).Value)

	cancel() // the last candidate gives up; observing ends
	<-won[2]
	_ = instances[1].Resign(context.Background())
	// Output:
	// leader: host-0:8080
	// leader: host-1:8080 higher term: true
	// leader: host-1:9090
}

// Run is the loop of a service that must run on exactly one instance:
// campaign, work while leading, and stop as soon as the leadership is
// lost.
func ExampleElection_Run() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	e := election.New(rdb, "migrations")
	rounds := 0
	err = e.Run(ctx, "host-7", func(ctx context.Context) error {
		// ctx is cancelled if the leadership is lost.
		rounds++
		fmt.Println("leading in a term of its own:", e.Term() != 0)
		if rounds == 2 {
			return fmt.Errorf("done after %d rounds", rounds) // ends Run
		}
		return nil // resigns, and campaigns again
	})
	fmt.Println(err)
	// Output:
	// leading in a term of its own: true
	// leading in a term of its own: true
	// done after 2 rounds
}
