package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Integration tier: the reply of each operation's script is lost after
// Redis ran it (the proxy drops it and cuts the connection), on a client
// with go-redis' default retries. Every operation must apply once and
// report what it really did.

// lostReplyCase is one operation whose first script reply is lost.
type lostReplyCase struct {
	name   string
	leased bool
	start  int64 // permits set before the operation; -1: never set
	// op runs the operation and returns what it reported, as a string.
	op      func(ctx context.Context, s *semaphore.Semaphore, l *semaphore.Leased) (string, error)
	want    string // what op reports
	wantErr bool   // op reports an error too
	avail   int64  // the available permits afterwards
}

var lostReplyCases = []lostReplyCase{
	{name: "Semaphore.TrySetPermits/new", start: -1, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return report(s.TrySetPermits(ctx, 4))
	}, want: "true", avail: 4},
	{name: "Semaphore.TrySetPermits/set", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return report(s.TrySetPermits(ctx, 4))
	}, want: "false", avail: 3},
	{name: "Semaphore.SetPermits", start: 1, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return "", s.SetPermits(ctx, 4)
	}, avail: 4},
	{name: "Semaphore.AddPermits", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return "", s.AddPermits(ctx, 2)
	}, avail: 5},
	{name: "Semaphore.AddPermits/negative", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return "", s.AddPermits(ctx, -2)
	}, avail: 1},
	{name: "Semaphore.Release", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return "", s.Release(ctx, 2)
	}, avail: 5},
	{name: "Semaphore.Acquire", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return "", s.Acquire(ctx, 2)
	}, avail: 1},
	// A TryAcquire makes one attempt: its lost take is given back, and
	// it fails.
	{name: "Semaphore.TryAcquire", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return report(s.TryAcquire(ctx, 2))
	}, want: "false", wantErr: true, avail: 3},
	{name: "Semaphore.Drain", start: 3, op: func(ctx context.Context, s *semaphore.Semaphore, _ *semaphore.Leased) (string, error) {
		return report(s.Drain(ctx))
	}, want: "3", avail: 0},
	{name: "Leased.TrySetPermits/new", leased: true, start: -1, op: func(ctx context.Context, _ *semaphore.Semaphore, l *semaphore.Leased) (string, error) {
		return report(l.TrySetPermits(ctx, 4))
	}, want: "true", avail: 4},
	{name: "Leased.TrySetPermits/set", leased: true, start: 3, op: func(ctx context.Context, _ *semaphore.Semaphore, l *semaphore.Leased) (string, error) {
		return report(l.TrySetPermits(ctx, 4))
	}, want: "false", avail: 3},
	{name: "Leased.SetPermits", leased: true, start: 1, op: func(ctx context.Context, _ *semaphore.Semaphore, l *semaphore.Leased) (string, error) {
		return "", l.SetPermits(ctx, 4)
	}, avail: 4},
	{name: "Leased.AddPermits", leased: true, start: 3, op: func(ctx context.Context, _ *semaphore.Semaphore, l *semaphore.Leased) (string, error) {
		return "", l.AddPermits(ctx, 2)
	}, avail: 5},
	{name: "Leased.AddPermits/negative", leased: true, start: 3, op: func(ctx context.Context, _ *semaphore.Semaphore, l *semaphore.Leased) (string, error) {
		return "", l.AddPermits(ctx, -2)
	}, avail: 1},
}

func TestLostReplies(t *testing.T) {
	srv := redistest.SharedServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := proxy.NewClient(t) // go-redis default: 3 retries
	redistest.LoadScripts(t, srv.NewClient(t))
	for _, tc := range lostReplyCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			name := redistest.UniqueName(t)
			check := lostReplyState(t, tc, name)
			dropped := proxy.DropReply(func(args []string) bool {
				return redistest.IsScriptCall(args, keyspace.NewNames(name).Lock())
			})
			got, err := tc.op(ctx, semaphore.New(rdb, name), semaphore.NewLeased(rdb, name))
			mustHaveDropped(t, dropped)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("with its reply lost: reported %q, %v; want %q (error: %v)", got, err, tc.want, tc.wantErr)
			}
			if avail := check(); avail != tc.avail {
				t.Errorf("available afterwards %d, want %d: not applied exactly once", avail, tc.avail)
			}
		})
	}
}

// lostReplyState sets the permits tc starts with, through a client of its
// own, and returns a function that reads the available permits the same
// way.
func lostReplyState(t *testing.T, tc lostReplyCase, name string) func() int64 {
	t.Helper()
	rdb := redistest.SharedServer(t).NewClient(t)
	s, l := semaphore.New(rdb, name), semaphore.NewLeased(rdb, name)
	if tc.start >= 0 {
		set := s.SetPermits
		if tc.leased {
			set = l.SetPermits
		}
		if err := set(t.Context(), tc.start); err != nil {
			t.Fatal(err)
		}
	}
	return func() int64 {
		t.Helper()
		available := s.Available
		if tc.leased {
			available = l.Available
		}
		n, err := available(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// report formats what an operation reported.
func report[T any](v T, err error) (string, error) {
	return fmt.Sprint(v), err
}

func mustHaveDropped(t *testing.T, dropped <-chan struct{}) {
	t.Helper()
	select {
	case <-dropped:
	default:
		t.Fatal("the proxy dropped no reply: the fault was not injected")
	}
}
