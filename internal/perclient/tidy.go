package perclient

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/script"
)

// tidier runs the clean-ups that callers who gave up leave behind: the
// give-back of an acquisition whose outcome is unknown or whose reply came
// after ctx ended, the removal of a waiter's place in line. A caller's
// wait ends with its ctx, and a clean-up that must still reach Redis (say,
// while Redis does not answer) finishes in the background instead of
// holding the caller past its deadline.
//
// Each job runs on a goroutine of its own, which the tidier owns: its stop
// signal is the job's limit (a ctx deadline), and the tidier counts it
// until it returns (Tidied). Jobs stand for callers that ran them on their
// own goroutines before, so they add no goroutine that was not there.
// The limit holds a command to it only on a client with go-redis'
// ContextTimeoutEnabled; without, a command that Redis does not answer
// runs for go-redis' own timeouts (ReadTimeout, 3s by default), and a
// closed client ends it at once.
type tidier struct {
	mu   sync.Mutex    // guards n and idle
	n    int           // jobs running
	idle chan struct{} // closed while n == 0
}

func newTidier() *tidier {
	idle := make(chan struct{})
	close(idle)
	return &tidier{idle: idle}
}

// Tidy runs job in the background on ctx's values, without its
// cancellation, for at most limit, and returns a channel that is closed
// once job has returned. c stays attached while job runs.
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
			// The command this job undoes first: sent on another
			// connection, the undo could otherwise run before it.
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

// inFlightWait bounds how long a clean-up waits for the command it undoes
// (AfterInFlight). A command that takes longer is stuck in a Redis that
// does not answer, where the undo would wait as long; past it the undo is
// sent all the same, and a copy of the command that Redis runs later is
// what the deadline of every acquisition bounds (see RequestWindow).
const inFlightWait = 500 * time.Millisecond

// AfterInFlight returns ctx, carrying the command still in flight that err
// reports, if any (script.InFlight): a clean-up run on the result
// (Client.Tidy, TidyUp) waits for that command first, so that Redis runs
// the undo after what it undoes.
func AfterInFlight(ctx context.Context, err error) context.Context {
	if ch := script.Settled(err); ch != nil {
		return context.WithValue(ctx, inFlightKey{}, ch)
	}
	return ctx
}

// Tidied returns a channel that is closed once no job of c's tidier is
// running.
func (c *Client) Tidied() <-chan struct{} {
	c.tidier.mu.Lock()
	defer c.tidier.mu.Unlock()
	return c.tidier.idle
}

// AwaitTidied waits until no clean-up of any client runs in the
// background (see Client.Tidy), or ctx is done, and reports whether none
// runs: tests call it before they look at what a call that failed left in
// Redis. Clean-ups are bounded, so a test's own ctx is bound enough.
func AwaitTidied(ctx context.Context) bool {
	var waits []<-chan struct{}
	registryMu.Lock()
	for _, c := range registry {
		waits = append(waits, c.Tidied())
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

// Tidied is AwaitTidied for the public packages' Tidied: ctx's error when
// ctx ends first.
func Tidied(ctx context.Context) error {
	if !AwaitTidied(ctx) {
		return ctx.Err()
	}
	return nil
}

// TidyUp runs job as Client.Tidy does, on rdb's shared Client, and waits
// for it until ctx is done: it reports whether job returned in time. A
// caller whose ctx has ended does not wait at all; the job finishes in
// the background, within limit.
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
