package redistest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
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

func TestProxyHold(t *testing.T) {
	srv := redistest.SharedServer(t)
	p := redistest.NewProxy(t, srv.Addr())
	direct := srv.NewClient(t)
	key := redistest.UniqueName(t)
	held := p.Hold(func(args []string) bool { return len(args) > 1 && args[0] == "SET" && args[1] == key })

	// A raw connection, so that the test sees what follows the held
	// command on the same connection: the GET sent after it must get its
	// own reply, not be taken for the SET's.
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$%[1]d\r\n%[2]s\r\n", len(key), key); err != nil {
		t.Fatal(err)
	}
	if reply, err := bufio.NewReader(conn).ReadString('\n'); err != nil || reply != "$-1\r\n" {
		t.Fatalf("first reply after a held SET = %q, %v; want the GET's nil", reply, err)
	}
	select {
	case <-held.Caught():
	default:
		t.Fatal("the SET was forwarded, not held")
	}
	if n := direct.Exists(ctx(t), key).Val(); n != 0 {
		t.Fatal("the held SET ran before Deliver")
	}

	reply, err := held.Deliver(ctx(t))
	if err != nil || reply != "+OK\r\n" {
		t.Fatalf("Deliver = %q, %v; want +OK", reply, err)
	}
	if v := direct.Get(ctx(t), key).Val(); v != "v" {
		t.Fatalf("after Deliver the key is %q, want v", v)
	}

	never := p.Hold(func([]string) bool { return false })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := never.Deliver(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver with nothing held and ctx cancelled = %v", err)
	}
}
