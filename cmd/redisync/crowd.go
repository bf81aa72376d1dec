package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/wait"
)

// crowd runs fn(i) for n concurrent callers, caller i on instance i mod P,
// all released at once from a start line so that they really overlap. It
// returns the time from the release until the last one finished, and the
// first error, which also cancels the others' ctx.
func crowd(ctx context.Context, instances []redis.UniversalClient, n int, fn func(ctx context.Context, rdb redis.UniversalClient, i int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		rdb := instances[i%len(instances)]
		wg.Go(func() {
			<-start
			if err := fn(ctx, rdb, i); err != nil {
				cancel(err)
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	return time.Since(began), context.Cause(ctx)
}

// unlockTimeout bounds an Unlock that runs after ctx is done.
const unlockTimeout = 5 * time.Second

// locked runs fn while holding m. The unlock runs even when ctx is done
// (its own deadline is unlockTimeout), so a cancelled run leaves no hold.
func locked(ctx context.Context, m mutex, fn func() error) error {
	if err := m.Lock(ctx); err != nil {
		return err
	}
	err := fn()
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if uerr := m.Unlock(uctx); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return err
}

// pause sleeps for d or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if !wait.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
