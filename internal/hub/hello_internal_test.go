package hub

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// A node connection authenticates as the client's own connections do:
// password, username and password, a credentials provider, and names
// itself; wrong credentials are an error.
func TestNodeHello(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "svc", "on", ">pw", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	// The admin connection stays authenticated as the default user after
	// the password is set: the server's cleanup uses it.
	if err := admin.ConfigSet(t.Context(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ConfigSet(context.Background(), "requirepass", "") })
	for _, c := range []struct {
		name string
		opt  redis.Options
		ok   bool
	}{
		{"password", redis.Options{Password: "s3cret", ClientName: "hello-test"}, true},
		{"user", redis.Options{Username: "svc", Password: "pw"}, true},
		{"provider", redis.Options{CredentialsProvider: func() (string, string) { return "svc", "pw" }}, true},
		{"provider-context", redis.Options{CredentialsProviderContext: func(context.Context) (string, string, error) {
			return "", "s3cret", nil
		}}, true},
		{"wrong", redis.Options{Password: "nope"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(nil, srv.Addr(), &c.opt)
			defer n.cancel()
			nc, br, err := n.dial()
			if !c.ok {
				if err == nil {
					_ = nc.Close()
					t.Fatal("dial with wrong credentials succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if reply := roundTrip(t, nc, br, "PING"); reply != "PONG" {
				t.Fatalf("PING after hello = %v", reply)
			}
			if c.opt.ClientName != "" {
				if reply := roundTrip(t, nc, br, "CLIENT", "GETNAME"); reply != c.opt.ClientName {
					t.Fatalf("CLIENT GETNAME = %v, want %q", reply, c.opt.ClientName)
				}
			}
		})
	}
}

func roundTrip(t *testing.T, nc net.Conn, br *bufio.Reader, args ...string) any {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(appendCommand(nil, args...)); err != nil {
		t.Fatal(err)
	}
	v, err := readReply(br)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
