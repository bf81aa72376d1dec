package rwlock_test

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/rwlock"
)

func mustRLock(t testing.TB, rw *rwlock.RWMutex) {
	t.Helper()
	if err := rw.RLock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func mustRUnlock(t testing.TB, rw *rwlock.RWMutex) {
	t.Helper()
	if err := rw.RUnlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func mustLock(t testing.TB, rw *rwlock.RWMutex) {
	t.Helper()
	if err := rw.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func mustUnlock(t testing.TB, rw *rwlock.RWMutex) {
	t.Helper()
	if err := rw.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// field returns the level that the only field of the lock hash of name
// that starts with prefix records: its value, "1" for a write level, and
// "1" for a read level, whose value is the tag of the attempt that took it.
func field(t testing.TB, rdb redis.UniversalClient, name, prefix string) string {
	t.Helper()
	all, err := rdb.HGetAll(t.Context(), lockKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for f, v := range all {
		if len(f) > len(prefix) && f[:len(prefix)] == prefix {
			if strings.HasPrefix(f, "r:") {
				v = "1"
			}
			got = append(got, v)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d fields %s* in %v, want 1", len(got), prefix, all)
	}
	return got[0]
}

// dump renders every key of the miniredis behind rdb with its hash fields,
// for before/after comparisons.
func dump(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	return dumpKeys(t, rdb, "*")
}

// dumpKeys renders the keys matching pattern on the node rdb with their
// hash fields.
func dumpKeys(t testing.TB, rdb redis.UniversalClient, pattern string) string {
	t.Helper()
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	var out string
	for _, k := range keys {
		out += k + "="
		if typ := rdb.Type(ctx, k).Val(); typ == "hash" {
			all := rdb.HGetAll(ctx, k).Val()
			fs := make([]string, 0, len(all))
			for f, v := range all {
				fs = append(fs, f+":"+v)
			}
			sort.Strings(fs)
			out += typ + "{" + strings.Join(fs, ",") + "} "
		} else {
			out += typ + " "
		}
	}
	return out
}

func assertNoKeysMini(t testing.TB, rdb redis.UniversalClient, name string) {
	t.Helper()
	perclient.AwaitTidied(t.Context())
	keys, err := rdb.Keys(t.Context(), lockKey(name)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("keys left behind: %v", keys)
	}
}

// writeHold write-locks rw through Do and returns the hold's ctx, in which
// RLock downgrades and Lock re-enters, and end, which releases the write
// hold and waits for Do to return.
func writeHold(t testing.TB, rw *rwlock.RWMutex) (context.Context, func()) {
	t.Helper()
	held, release, done := make(chan context.Context, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- rw.Do(t.Context(), func(ctx context.Context) error {
			held <- ctx
			<-release
			return nil
		})
	}()
	var ctx context.Context
	select {
	case ctx = <-held:
	case err := <-done:
		t.Fatalf("write Lock: %v", err)
	}
	return ctx, func() {
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("write Unlock: %v", err)
		}
	}
}

// ctxHook is a go-redis hook that calls before and after, either of which
// may be nil, with the ctx of every command: before it is sent, and once
// it has its reply (with the command). Tests use it to see what a
// goroutine, marked by a ctx value, sends.
type ctxHook struct {
	before func(ctx context.Context)
	after  func(ctx context.Context, cmd redis.Cmder)
}

func (ctxHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h ctxHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.before != nil {
			h.before(ctx)
		}
		err := next(ctx, cmd)
		if h.after != nil {
			h.after(ctx, cmd)
		}
		return err
	}
}

func (ctxHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countFrom is the ctx key of a *atomic.Int64 that countFromScript sets.
type countFrom struct{}

// countFromScript makes rdb record, in the *atomic.Int64 under countFrom
// in a command's ctx (which must hold -1), what counter holds when the
// first script of that ctx has its reply: the reply to a lock's first
// attempt. The connection's handshake (HELLO and the like) and a NOSCRIPT
// answer, which come before, do not count.
func countFromScript(rdb redis.UniversalClient, counter *atomic.Int64) {
	rdb.AddHook(ctxHook{after: func(ctx context.Context, cmd redis.Cmder) {
		from, ok := ctx.Value(countFrom{}).(*atomic.Int64)
		if !ok || cmd.Err() != nil {
			return
		}
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			from.CompareAndSwap(-1, counter.Load())
		}
	}})
}
