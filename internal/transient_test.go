package internal_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
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
		{internal.ErrUpgradeNotSupported, false},
		{fmt.Errorf("x: %w", internal.ErrNotReplicated), false},
		{errors.New("some library error"), false},
		{redis.ErrPoolTimeout, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
	} {
		if got := internal.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
