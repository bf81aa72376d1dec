package cmdstats_test

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/cmdstats"
)

func TestSent(t *testing.T) {
	ctx := t.Context()
	var s cmdstats.Sent
	if got := s.Take(); got != nil {
		t.Fatalf("Take of a zero Sent = %v, want nil", got)
	}
	var sent []redis.Cmder
	process := s.ProcessHook(func(_ context.Context, cmd redis.Cmder) error {
		sent = append(sent, cmd)
		return nil
	})
	pipeline := s.ProcessPipelineHook(func(_ context.Context, cmds []redis.Cmder) error {
		sent = append(sent, cmds...)
		return nil
	})
	_ = process(ctx, redis.NewCmd(ctx, "EVALSHA", "abc", 1, "k"))
	_ = process(ctx, redis.NewStatusCmd(ctx, "set", "k", "v"))
	_ = pipeline(ctx, []redis.Cmder{redis.NewStringCmd(ctx, "GET", "k"), redis.NewIntCmd(ctx, "Del", "k")})
	_ = process(ctx, redis.NewStringSliceCmd(ctx, "client", "list"))
	if len(sent) != 5 {
		t.Errorf("the hooks passed on %d commands, want 5", len(sent))
	}
	want := map[string]int64{"evalsha": 1, "set": 1, "get": 1, "del": 1, "client": 1}
	if got := s.Take(); !maps.Equal(got, want) {
		t.Errorf("Take = %v, want %v", got, want)
	}
	if got := s.Take(); got != nil {
		t.Errorf("Take after Take = %v, want nil", got)
	}
}

func TestSentConcurrent(t *testing.T) {
	ctx := t.Context()
	var s cmdstats.Sent
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				s.Add(redis.NewStatusCmd(ctx, "SET", "k", "v"))
			}
		})
	}
	wg.Wait()
	if got := s.Take()["set"]; got != 800 {
		t.Errorf("Take counted %d SETs, want 800", got)
	}
}
