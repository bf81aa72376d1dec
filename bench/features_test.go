package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
)

// TestHFEVariantsAgree drives today's read-write lock scripts and their
// field-expiry variants (bench/hfe) through the same read holds, a lapsed
// lease included, on the server REDISYNC_SERVER names, and wants the same
// outcome of every step from both: the features scenario compares the
// same work.
func TestHFEVariantsAgree(t *testing.T) {
	srv, err := startServer(t.Context())
	if errors.Is(err, errNoServer) && os.Getenv("REDISYNC_REQUIRE_REDIS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer rdb.Close()
	caps, err := probeCaps(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	if !caps.hfe {
		t.Skip("the server has no hash-field expiry (HPEXPIRE)")
	}
	got := map[bool]string{}
	for _, hfe := range []bool{false, true} {
		got[hfe] = readSteps(t.Context(), rdb, fmt.Sprintf("agree:%v", hfe), hfe)
	}
	if got[false] != got[true] {
		t.Errorf("outcomes differ:\ntoday: %s\nhfe:   %s", got[false], got[true])
	}
	t.Log(got[false])
}

// readSteps runs the steps with h and returns their outcomes.
func readSteps(ctx context.Context, rdb *redis.Client, name string, hfe bool) string {
	short := readHolder{rdb: rdb, keys: keyspace.NewNames(name).RWKeys(), hfe: hfe, lease: 100 * time.Millisecond}
	long := short
	long.lease = 10 * time.Second
	var out []string
	note := func(step string, err error) {
		out = append(out, fmt.Sprintf("%s=%v", step, err == nil))
	}
	lockTTL := func() string {
		d := rdb.PTTL(ctx, short.keys.Lock).Val()
		switch {
		case d < 0:
			return fmt.Sprint(d)
		case d > 5*time.Second:
			return "long"
		}
		return "short"
	}
	note("take a", short.take(ctx, "a:1"))
	note("take a again", short.take(ctx, "a:1"))
	note("release a", short.release(ctx, "a:1"))
	out = append(out, "ttl "+lockTTL())
	note("take b", long.take(ctx, "b:1"))
	out = append(out, "ttl "+lockTTL())
	note("release a", short.release(ctx, "a:1"))
	out = append(out, "ttl "+lockTTL())
	note("take a", short.take(ctx, "a:1"))
	time.Sleep(200 * time.Millisecond) // a's lease runs out
	note("renew a", short.renew(ctx, "a:1"))
	note("release a", short.release(ctx, "a:1"))
	note("renew b", long.renew(ctx, "b:1"))
	note("take a", short.take(ctx, "a:1"))
	note("release b", long.release(ctx, "b:1"))
	out = append(out, "ttl "+lockTTL())
	time.Sleep(200 * time.Millisecond)
	note("release a", short.release(ctx, "a:1"))
	out = append(out, "ttl "+lockTTL())
	return strings.Join(out, " ")
}
