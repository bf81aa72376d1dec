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

// Processor runs one command; every go-redis client is one, and so is a
// single connection (redis.Conn).
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// script is one embedded script.
type script struct {
	name string
	src  string
	s    *redis.Script
	// sha is s's hash as a command argument, boxed once: converting a
	// string to an interface allocates, on every call otherwise.
	sha any
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*script{}
)

// load returns the script of the embedded file name; it panics if there
// is none, which the package's tests catch.
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
// A test checks that it is every .lua file of package lua, and that each
// of them is covered by the lost-reply table.
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

// noRetry marks a command that go-redis must not send a second time after
// a network error, when it cannot know whether the server ran the first.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// run runs s like Script.Run (EVALSHA, and EVAL when the server does not
// know the script), except that go-redis never resends it after it may
// have reached the server: a lost reply comes back as an error, so the
// caller knows the outcome is unknown instead of seeing the reply of a
// second run. Every script that decides or reports something once runs
// this way; what a retry means is decided by the caller (the hold engine,
// or a receipt), never by go-redis.
func (s *script) run(ctx context.Context, c Processor, keys []string, args ...any) *redis.Cmd {
	return s.exec(ctx, c, false, s.evalsha(keys, args))
}

// exec is run for the arguments of an EVALSHA of s (see evalsha); with
// retry, go-redis may resend the script, as it does a script it runs
// (queue).
func (s *script) exec(ctx context.Context, c Processor, retry bool, evalsha []any) *redis.Cmd {
	if err := CheckServer(ctx, c); err != nil {
		cmd := redis.NewCmd(ctx, evalsha...)
		cmd.SetErr(err) // a server too old: nothing is sent (see MinVersion)
		return cmd
	}
	cmd := process(ctx, c, retry, evalsha)
	// Checked for nil first: HasErrorPrefix allocates even for none.
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Refused unrun: sending the source is the first run.
		eval := slices.Clone(evalsha)
		eval[0], eval[1] = "eval", s.src
		cmd = process(ctx, c, retry, eval)
	}
	return cmd
}

// Process runs the command args on c once, as go-redis never resends it
// (see noRetry), and returns by the time ctx is done, also on a client
// that does not bound its commands by ctx (go-redis' ContextTimeoutEnabled
// off, the default): a caller's deadline holds while Redis does not
// answer. The command then goes on on a goroutine of its own until the
// client's own timeouts end it (ReadTimeout, 3s by default), and the
// caller gets ctx's error, whose outcome is unknown: the engine undoes
// it as it does any other (see errs.OutcomeUnknown). Without a ctx
// that can end, or on a client that bounds its commands itself, no
// goroutine is started.
func Process(ctx context.Context, c Processor, args ...any) *redis.Cmd {
	return process(ctx, c, false, args)
}

// process is Process; with retry, go-redis may resend the command after a
// network error (a command that is safe to run twice).
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

// send sends cmd on c; without retry, go-redis never resends it (see
// noRetry). A function rather than a closure in process: one built on
// every script call was an allocation of its own.
func send(ctx context.Context, c Processor, retry bool, cmd *redis.Cmd) {
	if retry {
		_ = c.Process(ctx, cmd)
		return
	}
	_ = c.Process(ctx, noRetry{cmd})
}

// InFlight is the error of a script call whose ctx ended before its
// reply, on a client that does not bound commands by ctx (see Process):
// the command may still run in Redis. Whoever undoes it must let it
// settle first (Settled), or Redis may run the undo before it.
type InFlight struct {
	err  error
	done <-chan struct{}
}

func (e *InFlight) Error() string { return e.err.Error() }
func (e *InFlight) Unwrap() error { return e.err }

// Settled returns a channel that is closed once the command whose call
// failed with err has its reply or go-redis gave up on it; nil when err
// is not an InFlight.
func Settled(err error) <-chan struct{} {
	var f *InFlight
	if errors.As(err, &f) {
		return f.done
	}
	return nil
}

// outlasts reports whether a command of c may outlast ctx's deadline: c
// does not end a command when its ctx ends (go-redis'
// ContextTimeoutEnabled off), and the deadline comes before c's own read
// timeout would end it, by more than outlastSlack. A ctx without a
// deadline (cancelled, if at all, by its caller) is left to c's timeouts,
// as go-redis leaves it: the common Lock and Unlock start no goroutine.
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
	// A ReadTimeout of -1 (or 0 after go-redis' defaults: none) never ends
	// a command; past its deadline ctx would wait for ever.
	return read <= 0 || time.Until(deadline) < read-outlastSlack
}

// outlastSlack is how much later than its ctx's deadline a command may
// end without a goroutine of its own (see Process): one whose deadline
// comes less than this before the client's read timeout is left to the
// client, and its caller returns at most outlastSlack after the deadline,
// within the few milliseconds a wait promises (docs/guarantees.md). So a
// release, bounded by hold.ReleaseTimeout (5s), runs on its caller's
// goroutine on a client with go-redis' default read timeout (5s since
// v9.23): a goroutine per Unlock cost an uncontended Lock+Unlock about a
// third of its client time on a 2-core machine.
const outlastSlack = 2 * time.Millisecond

// queue runs s on c with Script.Run, which go-redis may resend, or queues
// it on a pipeline. Only renewals and the leased semaphore's count use
// it: a renewal sets a lease from now if the owner still holds, and the
// count returns expired permits to the pool before it counts, so running
// either twice is running it once.
//
// Run on a client rather than queued (a re-entry's renewal, a leased
// permit's count), it is bounded by ctx on any client, as every other
// script call, and go-redis may still resend it.
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

// evalsha returns the arguments of an EVALSHA of s with keys and args.
func (s *script) evalsha(keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}
