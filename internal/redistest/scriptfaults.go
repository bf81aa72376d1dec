package redistest

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptFaults is a go-redis hook that injects faults into the script
// calls (EVAL, EVALSHA) of one client, for unit tests on miniredis where
// the fault proxy cannot go. It acts above go-redis' own retries: a
// command it fails is not retried by go-redis, so what a test sees is
// what the library does about the fault by itself.
type ScriptFaults struct {
	lose   atomic.Int64
	refuse atomic.Bool
}

// AddScriptFaults installs a ScriptFaults hook on rdb.
func AddScriptFaults(rdb *redis.Client) *ScriptFaults {
	f := &ScriptFaults{}
	rdb.AddHook(f)
	return f
}

// LoseReplies lets the next n scripts that run on the server do so, and
// then reports their replies lost (io.ErrUnexpectedEOF): the caller cannot
// know they ran.
func (f *ScriptFaults) LoseReplies(n int) { f.lose.Store(int64(n)) }

// Refuse makes every script call fail with io.ErrUnexpectedEOF without
// reaching the server (on), or pass again (off).
func (f *ScriptFaults) Refuse(on bool) { f.refuse.Store(on) }

// Pending returns how many replies are still to be lost.
func (f *ScriptFaults) Pending() int64 { return max(f.lose.Load(), 0) }

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
		err := next(ctx, cmd)
		if err != nil || f.lose.Add(-1) < 0 {
			return err // a NOSCRIPT refusal, say, ran nothing
		}
		cmd.SetErr(io.ErrUnexpectedEOF)
		return io.ErrUnexpectedEOF
	}
}
