package internal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

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

// A wrong-type error names the key and what Redis found, and no script id.
func TestWrongTypeText(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	name := redistest.UniqueName(t)
	key := internal.NewNames(name).Lock()
	ctx := t.Context()
	rdb.Set(ctx, key, "v", 0)
	script := redis.NewScript("return redis.call('hget', KEYS[1], 'f')")
	reply := script.Run(ctx, rdb, []string{key}).Err()
	err := internal.Wrap("rlock", "lock", name, reply)
	want := fmt.Sprintf("rlock: lock %q: name holds a value of another kind: key %q: Operation against a key holding the wrong kind of value", name, key)
	if err.Error() != want {
		t.Fatalf("error text\n%s\nwant\n%s", err, want)
	}
	if !errors.Is(err, internal.ErrWrongType) || !errors.Is(err, reply) {
		t.Fatalf("%v does not match ErrWrongType and the reply", err)
	}
}
