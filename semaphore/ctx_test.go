package semaphore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// The rule for a take whose reply arrives after ctx ended: the permits go
// back, and the call returns the ctx error.

// The acquire script runs and takes the permits, then ctx ends before its
// reply reaches Acquire or TryAcquire.
func TestReplyAfterCtxEndedMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	hook := &scriptReplies{}
	rdb.AddHook(hook)
	s := semaphore.New(rdb, "late-reply")
	if err := s.SetPermits(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Acquire", func(ctx context.Context) error { return s.Acquire(ctx, 2) }},
		{"TryAcquire", func(ctx context.Context) error {
			ok, err := s.TryAcquire(ctx, 2)
			if ok {
				return errors.New("TryAcquire reported true")
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			hook.cancelAfterNext(cancel)
			if err := tc.call(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s whose reply came after ctx ended = %v, want context.Canceled", tc.name, err)
			}
			wantAvailable(t, s, 3)
		})
	}
}

// A waiter's ctx ends while a release frees the permit it waits for, 300
// times over on redis-server: whatever the order, an Acquire that returns
// nil holds the permit, one that fails holds nothing, and none whose take
// reply was read after ctx ended returns nil.
func TestCancelRacesReleaseStress(t *testing.T) {
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	rdb := srv.NewClient(t)
	hook := &scriptReplies{}
	rdb.AddHook(hook)
	name := redistest.UniqueName(t)
	holder, waiter := semaphore.New(direct, name), semaphore.New(rdb, name)
	if err := holder.SetPermits(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	won, late := 0, 0
	for i := range 300 {
		if ok, err := holder.TryAcquire(t.Context(), 1); !ok || err != nil {
			t.Fatalf("round %d: holder TryAcquire = %v, %v", i, ok, err)
		}
		hook.reset()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- waiter.Acquire(ctx, 1) }()
		channel := keyspace.NewNames(name).Channel()
		redistest.WaitFor(t, 5*time.Second, func() bool { return direct.PubSubNumSub(t.Context(), channel).Val()[channel] > 0 })
		// The cancel comes 0 to 1.5ms after the release: about when the
		// woken waiter's take is in flight.
		race(time.Duration(i%16)*100*time.Microsecond, func() { mustRelease(t, holder, 1) }, cancel)
		err := <-done
		cancel()
		switch {
		case err == nil && hook.lateReply():
			t.Fatalf("round %d: Acquire returned nil for a take whose reply came after ctx ended", i)
		case err == nil:
			won++
			wantAvailable(t, holder, 0)
			mustRelease(t, waiter, 1)
		case !errors.Is(err, context.Canceled):
			t.Fatalf("round %d: Acquire = %v, want nil or context.Canceled", i, err)
		default:
			if hook.lateReply() {
				late++
			}
			wantAvailable(t, holder, 1)
		}
	}
	t.Logf("the waiter got the permit in %d rounds of 300; in %d a script's reply came after ctx ended", won, late)
}

// race runs a and b at once, b after a delay of d.
func race(d time.Duration, a, b func()) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a() }()
	go func() { defer wg.Done(); time.Sleep(d); b() }()
	wg.Wait()
}

// scriptReplies is a go-redis hook on the script calls of one client: it
// records whether a reply was read after its caller's ctx ended, and can
// end that ctx right after the next script has run, before its reply
// reaches the caller.
type scriptReplies struct {
	late   atomic.Bool
	mu     sync.Mutex // guards cancel
	cancel context.CancelFunc
}

func (h *scriptReplies) cancelAfterNext(cancel context.CancelFunc) {
	h.mu.Lock()
	h.cancel = cancel
	h.mu.Unlock()
}

func (h *scriptReplies) reset()          { h.late.Store(false) }
func (h *scriptReplies) lateReply() bool { return h.late.Load() }

func (h *scriptReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *scriptReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name != "evalsha" && name != "eval" || err != nil {
			return err
		}
		h.mu.Lock()
		cancel := h.cancel
		h.cancel = nil
		h.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		if ctx.Err() != nil {
			h.late.Store(true)
		}
		return err
	}
}
