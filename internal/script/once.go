package script

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// Processor runs one command: any go-redis client, or a redis.Conn.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

type script struct {
	name string
	src  string
	s    *redis.Script
	sha  any // s.Hash(), boxed once rather than on every call
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*script{}
)

// load returns the embedded script name; it panics if there is none.
func load(name string) *script {
	src, err := lua.Source(name)
	if err != nil {
		panic(fmt.Sprintf("script: %v", err))
	}
	rs := redis.NewScript(src)
	s := &script{name: name, src: src, s: rs, sha: rs.Hash()}
	loadedMu.Lock()
	defer loadedMu.Unlock()
	loaded[name] = s
	return s
}

// Loaded returns the file names of every script a wrapper runs, sorted.
func Loaded() []string {
	loadedMu.Lock()
	defer loadedMu.Unlock()
	names := make([]string, 0, len(loaded))
	for n := range loaded {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// noRetry marks a command go-redis must not resend after a network error.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// run runs s like Script.Run, but go-redis never resends it: a lost reply
// comes back as an error, so the caller knows the outcome is unknown
// rather than seeing a second run's reply. The caller (the hold engine, a
// receipt) decides what a retry means.
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
// commands by ctx (ContextTimeoutEnabled off, the default). The command
// then goes on, on a goroutine, until the client's ReadTimeout ends it,
// and the caller gets ctx's error with the outcome unknown (InFlight).
func Process(ctx context.Context, c Processor, args ...any) *redis.Cmd {
	return process(ctx, c, false, args)
}

// process is Process; with retry, go-redis may resend the command.
func process(ctx context.Context, c Processor, retry bool, args []any) *redis.Cmd {
	if !outlasts(c, ctx) {
		cmd := redis.NewCmd(ctx, args...)
		send(ctx, c, retry, cmd)
		return cmd
	}
	inner := redis.NewCmd(ctx, args...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(ctx, c, retry, inner)
	}()
	select {
	case <-done:
		return inner
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx, args...)
		cmd.SetErr(&InFlight{err: fmt.Errorf("%w: no reply from Redis yet (the client does not bound commands by ctx)", ctx.Err()), done: done})
		return cmd
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

// InFlight is the error of a call whose ctx ended before its reply (see
// Process): the command may still run, so an undo must wait for Settled,
// or Redis may run the undo first.
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
// more than outlastSlack. A ctx without a deadline is left to c's
// timeouts, as go-redis leaves it, so a plain Lock starts no goroutine.
func outlasts(c Processor, ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return false
	}
	read := 5 * time.Second // go-redis' default ReadTimeout (3s before v9.23)
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		if o.ContextTimeoutEnabled {
			return false
		}
		read = o.ReadTimeout
	case *redis.ClusterClient:
		o := c.Options()
		if o.ContextTimeoutEnabled {
			return false
		}
		read = o.ReadTimeout
	}
	// A ReadTimeout <= 0 never ends a command.
	return read <= 0 || time.Until(deadline) < read-outlastSlack
}

// outlastSlack is how far past its ctx's deadline a command may end
// without a goroutine (within what docs/guarantees.md promises). So a
// release, bounded by hold.ReleaseTimeout (5s), needs none on the default
// 5s ReadTimeout: a goroutine per Unlock cost a third of an uncontended
// Lock+Unlock.
const outlastSlack = 2 * time.Millisecond

// queue runs s on c, or queues it on a pipeline, and go-redis may resend
// it. Only renewals, election proclaims and the leased count use it: each
// run twice is run once. Run on a client, it is bounded by ctx as run is.
func (s *script) queue(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	if _, queued := c.(redis.Pipeliner); !queued {
		if p, ok := c.(Processor); ok {
			return s.exec(ctx, p, true, s.evalsha(keys, args))
		}
	}
	if err := CheckServer(ctx, c); err != nil {
		cmd := redis.NewCmd(ctx, s.evalsha(keys, args)...)
		cmd.SetErr(err)
		return cmd
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
