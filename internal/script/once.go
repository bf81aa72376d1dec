package script

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// Processor runs one command: any go-redis client, or a redis.Conn.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

type script struct {
	src string
	s   *redis.Script
	sha any // s.Hash(), boxed once rather than on every call
}

// load returns the embedded script name; it panics if there is none.
func load(name string) *script {
	src, err := lua.Source(name)
	if err != nil {
		panic(fmt.Sprintf("script: %v", err))
	}
	rs := redis.NewScript(src)
	return &script{src: src, s: rs, sha: rs.Hash()}
}

// noRetry marks a command go-redis must not resend after a network error.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// run runs s like Script.Run, but go-redis never resends it: a lost reply
// is an error, an unknown outcome, not a second run's reply.
func (s *script) run(ctx context.Context, c Processor, keys []string, args ...any) *redis.Cmd {
	return s.exec(ctx, c, false, s.evalsha(keys, args))
}

// exec runs the EVALSHA evalsha of s; with retry, go-redis may resend it.
func (s *script) exec(ctx context.Context, c Processor, retry bool, evalsha []any) *redis.Cmd {
	if err := CheckServer(ctx, c); err != nil {
		cmd := redis.NewCmd(ctx, evalsha...)
		cmd.SetErr(err) // a server too old: nothing is sent
		return cmd
	}
	cmd := process(ctx, c, retry, evalsha)
	// Checked for nil first: HasErrorPrefix allocates even for none.
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Refused unrun, so the EVAL is the first run.
		eval := slices.Clone(evalsha)
		eval[0], eval[1] = "eval", s.src
		cmd = process(ctx, c, retry, eval)
	}
	return cmd
}

// Process runs the command args on c without go-redis resends, and
// returns by the time ctx is done even on a client that does not bound
// commands by ctx (the default): the command goes on on a goroutine, and
// the caller gets an InFlight error.
func Process(ctx context.Context, c Processor, args ...any) *redis.Cmd {
	return process(ctx, c, false, args)
}

// process is Process; with retry, go-redis may resend the command.
func process(ctx context.Context, c Processor, retry bool, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if !outlasts(c, ctx) {
		send(ctx, c, retry, cmd)
		return cmd
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(ctx, c, retry, cmd)
	}()
	select {
	case <-done:
		return cmd
	case <-ctx.Done():
		late := redis.NewCmd(ctx, args...) // cmd is still the goroutine's
		late.SetErr(&InFlight{err: fmt.Errorf("%w: no reply from Redis yet (the client does not bound commands by ctx)", ctx.Err()), done: done})
		return late
	}
}

// send sends cmd on c. A function, not a closure in process, which
// allocated on every call.
func send(ctx context.Context, c Processor, retry bool, cmd *redis.Cmd) {
	if retry {
		_ = c.Process(ctx, cmd)
		return
	}
	_ = c.Process(ctx, noRetry{cmd})
}

// InFlight is the error of a call whose ctx ended before its reply: an
// undo must wait for Settled, or Redis may run it first.
type InFlight struct {
	err  error
	done <-chan struct{}
}

func (e *InFlight) Error() string { return e.err.Error() }
func (e *InFlight) Unwrap() error { return e.err }

// Settled returns a channel closed once the command that failed with err
// has its reply or go-redis gave up; nil when err is not an InFlight.
func Settled(err error) <-chan struct{} {
	var f *InFlight
	if errors.As(err, &f) {
		return f.done
	}
	return nil
}

// outlasts reports whether a command of c may outlast ctx's deadline by
// more than outlastSlack. Without a deadline, c's timeouts rule.
func outlasts(c Processor, ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return false
	}
	read := 5 * time.Second // go-redis' default ReadTimeout (3s before v9.23)
	bounded := false
	switch c := c.(type) {
	case *redis.Client:
		bounded, read = c.Options().ContextTimeoutEnabled, c.Options().ReadTimeout
	case *redis.ClusterClient:
		bounded, read = c.Options().ContextTimeoutEnabled, c.Options().ReadTimeout
	}
	if bounded {
		return false
	}
	// A ReadTimeout <= 0 never ends a command.
	return read <= 0 || time.Until(deadline) < read-outlastSlack
}

// outlastSlack lets a release (5s) on the default 5s ReadTimeout run
// without a goroutine, which cost a third of an uncontended Lock+Unlock.
const outlastSlack = 2 * time.Millisecond

// queue runs s, or queues it on a pipeline (which CheckServer, knowing
// only clients, passes), and go-redis may resend it: only for scripts
// where two runs are one (renewals, proclaim, count).
func (s *script) queue(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	p, ok := c.(Processor)
	if _, queued := c.(redis.Pipeliner); ok && !queued {
		return s.exec(ctx, p, true, s.evalsha(keys, args))
	}
	return s.s.Run(ctx, c, keys, args...)
}

func (s *script) evalsha(keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}
