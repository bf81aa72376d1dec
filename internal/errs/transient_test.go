package errs_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestTransient(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rdb.Set(t.Context(), "s", "x", 0)
	wrongType := rdb.HGet(t.Context(), "s", "f").Err()
	if wrongType == nil {
		t.Fatal("expected a WRONGTYPE reply")
	}
	// A dial that times out (a host that drops packets): the net package's
	// timeout error matches context.DeadlineExceeded, but it is a network
	// fault to ride out, not the end of a caller's ctx.
	_, dialTimeout := (&net.Dialer{Deadline: time.Now().Add(-time.Second)}).Dial("tcp", "127.0.0.1:1")
	if !errors.Is(dialTimeout, context.DeadlineExceeded) {
		t.Fatalf("dial past its deadline = %v; want an error that matches context.DeadlineExceeded", dialTimeout)
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{redis.ErrClosed, false},
		{wrongType, false},
		{io.EOF, true},
		{errs.ErrUpgradeNotSupported, false},
		{fmt.Errorf("x: %w", errs.ErrNotReplicated), false},
		{errors.New("some library error"), false},
		{redis.ErrPoolTimeout, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{dialTimeout, true},
	} {
		if got := errs.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
