package cmdstats

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Sent counts the commands clients send, by name: what [Stats.Usec] needs
// to tell them from the same commands run inside scripts. It is a
// go-redis hook (AddHook it to each client), or a part of one through
// Add. Pub/sub traffic bypasses hooks. The zero Sent is ready to use, and
// its methods may be called concurrently.
type Sent struct {
	mu sync.Mutex // protects n
	n  map[string]int64
}

// DialHook returns next: Sent counts no connection.
func (s *Sent) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts each command before next sends it.
func (s *Sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.Add(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts each command of a pipeline before next sends
// them.
func (s *Sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.Add(cmd)
		}
		return next(ctx, cmds)
	}
}

// Add counts cmd under its name in lower case, as commandstats names a
// command; a subcommand counts under its command ("client"), where
// commandstats names both ("client|setinfo").
func (s *Sent) Add(cmd redis.Cmder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = make(map[string]int64)
	}
	s.n[strings.ToLower(cmd.Name())]++
}

// Take returns the counts since the last Take (nil if none) and starts
// again from zero.
func (s *Sent) Take() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = nil
	return n
}
