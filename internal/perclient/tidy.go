package perclient

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// tidier runs the clean-ups that callers who gave up leave behind (the
// give-back of an acquisition whose outcome is unknown or came late, the
// removal of a place in line), so that one that must still reach Redis
// does not hold its caller past its deadline. Each job runs on a goroutine
// that a caller ran it on before, and stops at its limit, which binds a
// command only with go-redis' ContextTimeoutEnabled; without, a command
// Redis does not answer runs for go-redis' ReadTimeout (3s by default).
type tidier struct {
	mu   sync.Mutex
	n    int           // jobs running
	idle chan struct{} // closed while n == 0
}

func newTidier() *tidier {
	idle := make(chan struct{})
	close(idle)
	return &tidier{idle: idle}
}

// Tidy runs job in the background on ctx's values, without its
// cancellation, for at most limit, and returns a channel closed once job
// has returned. c stays attached while job runs.
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
			// Sent on another connection, the undo could run before the
			// command it undoes.
			t := time.NewTimer(inFlightWait)
			select {
			case <-inFlight:
			case <-t.C:
			case <-jctx.Done():
			}
			t.Stop()
		}
		job(jctx)
	}()
	return done
}

type inFlightKey struct{}

// inFlightWait bounds the wait for the command a clean-up undoes: one
// taking longer is stuck in a Redis that would hold the undo as long, and
// a late copy of it is bounded by every acquisition's deadline.
const inFlightWait = 500 * time.Millisecond

// AfterInFlight returns ctx carrying the command still in flight that err
// reports (script.InFlight), if any, which a clean-up on ctx (Client.Tidy,
// TidyUp) waits for, so that Redis runs the undo after what it undoes.
func AfterInFlight(ctx context.Context, err error) context.Context {
	if ch := script.Settled(err); ch != nil {
		return context.WithValue(ctx, inFlightKey{}, ch)
	}
	return ctx
}

// AwaitTidied waits until no clean-up of any client runs, or ctx is done,
// and reports whether none runs; tests call it before they look at what a
// failed call left in Redis.
func AwaitTidied(ctx context.Context) bool {
	var waits []<-chan struct{}
	registryMu.Lock()
	for _, c := range registry {
		c.tidier.mu.Lock()
		waits = append(waits, c.tidier.idle)
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

// Tidied is AwaitTidied for the public packages: ctx's error when ctx ends
// first.
func Tidied(ctx context.Context) error {
	if !AwaitTidied(ctx) {
		return ctx.Err()
	}
	return nil
}

// TidyUp runs job as Client.Tidy does on rdb's Client, and reports whether
// it returned before ctx was done; the job goes on in the background
// within limit.
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
