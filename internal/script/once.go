package script

import (
	"context"
	"fmt"
	"sort"
	"sync"

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
	s := &script{name: name, src: src, s: redis.NewScript(src)}
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
	cmd := redis.NewCmd(ctx, evalArgs("evalsha", s.s.Hash(), keys, args)...)
	if err := CheckServer(ctx, c); err != nil {
		cmd.SetErr(err) // a server too old: nothing is sent (see MinVersion)
		return cmd
	}
	_ = c.Process(ctx, noRetry{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// Refused unrun: sending the source is the first run.
		cmd = redis.NewCmd(ctx, evalArgs("eval", s.src, keys, args)...)
		_ = c.Process(ctx, noRetry{cmd})
	}
	return cmd
}

// queue runs s on c with Script.Run, which go-redis may resend, or queues
// it on a pipeline. Only renewals and the leased semaphore's count use
// it: a renewal sets a lease from now if the owner still holds, and the
// count returns expired permits to the pool before it counts, so running
// either twice is running it once.
func (s *script) queue(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	if err := CheckServer(ctx, c); err != nil {
		cmd := redis.NewCmd(ctx, evalArgs("evalsha", s.s.Hash(), keys, args)...)
		cmd.SetErr(err)
		return cmd
	}
	return s.s.Run(ctx, c, keys, args...)
}

func evalArgs(verb, script string, keys []string, args []any) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, verb, script, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}
