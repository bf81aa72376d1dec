package lua

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Processor runs one command; every go-redis client is one.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// noRetry marks a command that go-redis must not send a second time after
// a network error, when it cannot know whether the server ran the first.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// runOnce runs s like Script.Run (EVALSHA, and EVAL when the server does
// not know the script), except that go-redis never retries it after it may
// have reached the server: a lost reply comes back as an error, so the
// caller knows the outcome is unknown instead of seeing the reply of a
// second run.
func runOnce(ctx context.Context, c Processor, s *redis.Script, src string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, evalArgs("evalsha", s.Hash(), keys, args)...)
	_ = c.Process(ctx, noRetry{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// Refused unrun: sending the source is the first run.
		cmd = redis.NewCmd(ctx, evalArgs("eval", src, keys, args)...)
		_ = c.Process(ctx, noRetry{cmd})
	}
	return cmd
}

func evalArgs(verb, script string, keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, verb, script, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}
