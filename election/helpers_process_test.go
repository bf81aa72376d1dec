package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/redistest"
)

// helpers are the processes the tests start (see redistest.StartHelper).
var helpers = map[string]redistest.HelperFunc{
	// lead ADDR NAME campaigns in the election NAME on the server at ADDR
	// with a 2s watchdog timeout, writes "leading TERM" once it leads,
	// and leads until it is killed.
	"lead": func(ctx context.Context, args []string, _ <-chan string) error {
		rdb := redis.NewClient(&redis.Options{Addr: args[0]})
		defer rdb.Close()
		e := election.New(rdb, args[1], election.WithWatchdogTimeout(2*time.Second))
		if err := e.Campaign(ctx, "helper"); err != nil {
			return err
		}
		fmt.Println("leading", e.Term())
		<-ctx.Done()
		return nil
	},
}
