package errs_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// Only Redis' WRONGTYPE reply is a wrong type: a lock named "WRONGTYPE"
// whose wait timed out is not one.
func TestWrongTypeOnlyFromTheReply(t *testing.T) {
	err := errs.Wrap("rlock", "lock", "WRONGTYPE", context.DeadlineExceeded)
	if errors.Is(err, errs.ErrWrongType) || errs.IsWrongType(err) {
		t.Fatalf("%v matches ErrWrongType", err)
	}
	_, rdb := redistest.Mini(t)
	ctx := t.Context()
	rdb.Set(ctx, "k", "v", 0)
	reply := rdb.HGet(ctx, "k", "f").Err()
	if !errs.IsWrongType(reply) {
		t.Fatalf("IsWrongType(%v) = false", reply)
	}
	if err := errs.Wrap("rlock", "lock", "k", reply); !errors.Is(err, errs.ErrWrongType) {
		t.Fatalf("%v does not match ErrWrongType", err)
	}
}

// A wrong-type error names the key and what Redis found, and no script id.
func TestWrongTypeText(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	name := redistest.UniqueName(t)
	key := keyspace.NewNames(name).Lock()
	ctx := t.Context()
	rdb.Set(ctx, key, "v", 0)
	script := redis.NewScript("return redis.call('hget', KEYS[1], 'f')")
	reply := script.Run(ctx, rdb, []string{key}).Err()
	err := errs.Wrap("rlock", "lock", name, reply)
	want := fmt.Sprintf("rlock: lock %q: name holds a value of another kind: key %q: Operation against a key holding the wrong kind of value", name, key)
	if err.Error() != want {
		t.Fatalf("error text\n%s\nwant\n%s", err, want)
	}
	if !errors.Is(err, errs.ErrWrongType) || !errors.Is(err, reply) {
		t.Fatalf("%v does not match ErrWrongType and the reply", err)
	}
}

// A count beyond 2^53 - 1 is refused with ErrOutOfRange; so is a script's
// OUTOFRANGE reply, which reads without its code and script id, and only
// the reply matches: a name that says OUTOFRANGE does not.
func TestOutOfRange(t *testing.T) {
	for _, v := range []int64{errs.MaxCount, -errs.MaxCount, 0} {
		if err := errs.CheckCount("permits", v); err != nil {
			t.Fatalf("CheckCount(%d) = %v", v, err)
		}
	}
	for _, v := range []int64{errs.MaxCount + 1, -errs.MaxCount - 1} {
		err := errs.CheckCount("permits", v)
		want := fmt.Sprintf("number out of range: permits %d is beyond 2^53 - 1, the most a script holds exactly", v)
		if !errors.Is(err, errs.ErrOutOfRange) || fmt.Sprint(err) != want {
			t.Fatalf("CheckCount(%d) = %v, want %q", v, err, want)
		}
	}
	if err := errs.Wrap("semaphore", "release", "OUTOFRANGE", context.Canceled); errors.Is(err, errs.ErrOutOfRange) {
		t.Fatalf("%v matches ErrOutOfRange", err)
	}
	_, rdb := redistest.Mini(t)
	script := redis.NewScript("return redis.error_reply('OUTOFRANGE the permit count would pass 2^53 - 1')")
	reply := script.Run(t.Context(), rdb, []string{"k"}).Err()
	err := errs.Wrap("semaphore", "release", "k", reply)
	want := `semaphore: release "k": number out of range: the permit count would pass 2^53 - 1`
	if !errors.Is(err, errs.ErrOutOfRange) || !errors.Is(err, reply) || fmt.Sprint(err) != want {
		t.Fatalf("Wrap of %v = %v, want %q matching ErrOutOfRange and the reply", reply, err, want)
	}
}
