package perclient

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// tidier runs in the background the clean-ups that callers who gave up
// leave, so that one that must still reach Redis does not hold its caller
// past its deadline. A job's goroutine ends within its limit, which binds
// a command only with go-redis' ContextTimeoutEnabled; else ReadTimeout
// (3s by default) does.
type tidier struct {
	mu   sync.Mutex
	n    int           // jobs running
	idle chan struct{} // closed while n == 0, nil before the first job
}

// Tidy runs job in the background on ctx without its cancellation, for at
// most limit, and returns a channel closed once job has returned.
func (c *Client) Tidy(ctx context.Context, limit time.Duration, job func(ctx context.Context)) <-chan struct{} {
	registryMu.Lock()
	c.refs++ // as Attach: the entry outlives the job
	registryMu.Unlock()
	t := c.tidier
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	done := make(chan struct{})
	inFlight, _ := ctx.Value(inFlightKey{}).(<-chan struct{})
	go func() {
		defer func() {
			cancel()
			close(done)
			t.mu.Lock()
			if t.n--; t.n == 0 {
				close(t.idle)
			}
			t.mu.Unlock()
			c.Detach()
		}()
		if inFlight != nil {
			// On another connection, the undo could overtake it.
			select {
			case <-inFlight:
			case <-time.After(inFlightWait):
			case <-jctx.Done():
			}
		}
		job(jctx)
	}()
	return done
}

type inFlightKey struct{}

// inFlightWait bounds the wait for the command a clean-up undoes: one
// taking longer is stuck in a Redis that would hold the undo as long.
const inFlightWait = 500 * time.Millisecond

// AfterInFlight returns ctx carrying the command err reports in flight,
// if any, which a clean-up on ctx waits for before it undoes it.
func AfterInFlight(ctx context.Context, err error) context.Context {
	if ch := script.Settled(err); ch != nil {
		return context.WithValue(ctx, inFlightKey{}, ch)
	}
	return ctx
}

// AwaitTidied waits until no clean-up of any client runs, or ctx is done,
// and reports whether none runs.
func AwaitTidied(ctx context.Context) bool {
	var waits []<-chan struct{}
	registryMu.Lock()
	for _, c := range registry {
		c.tidier.mu.Lock()
		if c.tidier.idle != nil {
			waits = append(waits, c.tidier.idle)
		}
		c.tidier.mu.Unlock()
	}
	registryMu.Unlock()
	for _, idle := range waits {
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Tidied is AwaitTidied returning ctx's error when ctx ends first.
func Tidied(ctx context.Context) error {
	if !AwaitTidied(ctx) {
		return ctx.Err()
	}
	return nil
}

// TidyUp runs job as Client.Tidy does on rdb's Client, and reports whether
// it returned before ctx was done.
func TidyUp(ctx context.Context, rdb redis.UniversalClient, limit time.Duration, job func(ctx context.Context)) bool {
	c := Attach(rdb)
	done := c.Tidy(ctx, limit, job)
	c.Detach()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
