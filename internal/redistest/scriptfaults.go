package redistest

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptFaults is a go-redis hook that injects faults into the script
// calls (EVAL, EVALSHA) of one client, for unit tests on miniredis where
// the fault proxy cannot go. It acts above go-redis' own retries: a
// command it fails is not retried by go-redis, so what a test sees is
// what the library does about the fault by itself.
type ScriptFaults struct {
	refuse atomic.Bool

	mu   sync.Mutex // guards lose and how
	lose int64      // replies still to lose
	how  loss       // how they are reported
}

// AddScriptFaults installs a ScriptFaults hook on rdb.
func AddScriptFaults(rdb *redis.Client) *ScriptFaults {
	f := &ScriptFaults{}
	rdb.AddHook(f)
	return f
}

// LoseReplies lets the next n scripts that run on the server do so, and
// then reports their replies lost: the caller cannot know they ran. By
// default the caller gets io.ErrUnexpectedEOF at once; opts change what it
// gets and when. A script that fails on the server (a NOSCRIPT refusal,
// say) ran nothing and is not counted.
func (f *ScriptFaults) LoseReplies(n int, opts ...LossOption) {
	var how loss
	for _, o := range opts {
		o(&how)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose, f.how = int64(n), how
}

// A LossOption says how LoseReplies reports a lost reply.
type LossOption func(*loss)

type loss struct {
	err       error
	cancel    context.CancelFunc
	untilDone bool
}

// LoseAs reports err instead of io.ErrUnexpectedEOF, say context.Canceled
// for a reply lost because the caller's ctx ended while it was in flight.
func LoseAs(err error) LossOption { return func(l *loss) { l.err = err } }

// LoseCancelling calls cancel once the script has run, before the loss is
// reported: the caller's ctx ends while the reply is in flight.
func LoseCancelling(cancel context.CancelFunc) LossOption {
	return func(l *loss) { l.cancel = cancel }
}

// LoseUntilDone withholds the reply until the command's ctx ends, then
// reports ctx.Err() (or the error given with LoseAs): the caller gives up
// waiting for a reply that never comes.
func LoseUntilDone() LossOption { return func(l *loss) { l.untilDone = true } }

// Refuse makes every script call fail with io.ErrUnexpectedEOF without
// reaching the server (on), or pass again (off).
func (f *ScriptFaults) Refuse(on bool) { f.refuse.Store(on) }

// Pending returns how many replies are still to be lost.
func (f *ScriptFaults) Pending() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lose
}

// take reports whether the reply of a script that ran is to be lost, and
// how.
func (f *ScriptFaults) take() (loss, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose <= 0 {
		return loss{}, false
	}
	f.lose--
	return f.how, true
}

// report ends the call whose reply is lost, and returns what its caller
// gets instead of the reply.
func (l loss) report(ctx context.Context) error {
	if l.cancel != nil {
		l.cancel()
	}
	err := l.err
	if l.untilDone {
		<-ctx.Done()
		if err == nil {
			err = ctx.Err()
		}
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (f *ScriptFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *ScriptFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (f *ScriptFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		if f.refuse.Load() {
			cmd.SetErr(io.ErrUnexpectedEOF)
			return io.ErrUnexpectedEOF
		}
		if err := next(ctx, cmd); err != nil {
			return err // a NOSCRIPT refusal, say, ran nothing
		}
		how, lost := f.take()
		if !lost {
			return nil
		}
		err := how.report(ctx)
		cmd.SetErr(err)
		return err
	}
}
