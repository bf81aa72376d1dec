package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

func TestProxyForwardsStallsAndCuts(t *testing.T) {
	srv := redistest.SharedServer(t)
	p := redistest.NewProxy(t, srv.Addr())
	rdb := p.NewClient(t, func(o *redis.Options) { o.MaxRetries = -1 })
	key := redistest.UniqueName(t)
	if err := rdb.Set(ctx(t), key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	p.Stall()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rdb2 := p.NewClient(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true; o.MaxRetries = -1 })
	if err := rdb2.Get(short, key).Err(); err == nil {
		t.Fatal("GET answered through a stalled proxy")
	}
	got := make(chan string, 1)
	go func() { got <- rdb.Get(context.Background(), key).Val() }()
	select {
	case v := <-got:
		t.Fatalf("GET answered %q during the stall", v)
	case <-time.After(100 * time.Millisecond):
	}
	p.Resume()
	if v := <-got; v != "v" {
		t.Fatalf("held GET answered %q after Resume", v)
	}

	if n := p.Cut(); n == 0 {
		t.Fatal("Cut found no connection")
	}
	if n := p.Conns(); n != 0 {
		t.Fatalf("%d connections left after Cut", n)
	}
	if v := rdb.Get(ctx(t), key).Val(); v != "v" {
		t.Fatalf("GET on a fresh connection = %q", v)
	}
}

func TestProxyDropReply(t *testing.T) {
	srv := redistest.SharedServer(t)
	p := redistest.NewProxy(t, srv.Addr())
	rdb := p.NewClient(t, func(o *redis.Options) { o.MaxRetries = -1 })
	key := redistest.UniqueName(t)
	dropped := p.DropReply(func(args []string) bool { return len(args) > 1 && args[0] == "incr" && args[1] == key })
	if err := rdb.Incr(ctx(t), key).Err(); err == nil {
		t.Fatal("INCR answered although its reply was dropped")
	}
	<-dropped
	// The server ran the command: the reply, not the command, was lost.
	if v := srv.NewClient(t).Get(ctx(t), key).Val(); v != "1" {
		t.Fatalf("counter = %q after the dropped INCR, want 1", v)
	}
	if n, err := rdb.Incr(ctx(t), key).Result(); err != nil || n != 2 {
		t.Fatalf("next INCR = %d, %v; the rule must fire once", n, err)
	}
	if p.Dropped() != 1 {
		t.Fatalf("Dropped = %d, want 1", p.Dropped())
	}
	if !redistest.IsScriptCall([]string{"evalsha", "abc", "2", "k1", key, "arg"}, key) ||
		redistest.IsScriptCall([]string{"evalsha", "abc", "1", "k1", key}, key) {
		t.Fatal("IsScriptCall must match keys, not arguments")
	}
}
