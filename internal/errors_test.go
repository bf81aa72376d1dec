package internal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
)

// Only Redis' WRONGTYPE reply is a wrong type: a lock named "WRONGTYPE"
// whose wait timed out is not one.
func TestWrongTypeOnlyFromTheReply(t *testing.T) {
	err := internal.Wrap("rlock", "lock", "WRONGTYPE", context.DeadlineExceeded)
	if errors.Is(err, internal.ErrWrongType) || internal.IsWrongType(err) {
		t.Fatalf("%v matches ErrWrongType", err)
	}
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rdb.Set(ctx, "k", "v", 0)
	reply := rdb.HGet(ctx, "k", "f").Err()
	if !internal.IsWrongType(reply) {
		t.Fatalf("IsWrongType(%v) = false", reply)
	}
	if err := internal.Wrap("rlock", "lock", "k", reply); !errors.Is(err, internal.ErrWrongType) {
		t.Fatalf("%v does not match ErrWrongType", err)
	}
}
