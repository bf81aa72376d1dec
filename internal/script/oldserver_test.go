package script_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// oldServerEnv names a server binary older than script.MinVersion (Debian
// bullseye's redis-server 6.0.16: .ci/servers fetches it and sets it).
const oldServerEnv = "REDISYNC_OLD_SERVER"

// TestOldServerRefused checks the version check on a server below the
// minimum: the first call of each primitive, on an empty server and on
// one where another owner holds (so that the call would wait), returns
// one error that names the server's version and the minimum and matches
// the ErrOldServer its package exports, and sends the server nothing but
// its client's version script (which reads INFO inside Lua on a server
// this old): no key changes.
func TestOldServerRefused(t *testing.T) {
	bin := os.Getenv(oldServerEnv)
	if bin == "" {
		t.Skipf("%s is not set: it names a server older than Redis %s (.ci/servers sets it to Debian bullseye's redis-server 6.0.16)", oldServerEnv, script.MinVersion)
	}
	t.Setenv(redistest.ServerEnv, bin)
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	ctx := t.Context()
	version := infoField(t, admin, "redis_version")
	name := redistest.UniqueName(t)
	n := keyspace.NewNames(name)
	sem := name + "-semaphore"

	calls := []struct {
		what   string
		public error // the package's ErrOldServer
		call   func(ctx context.Context, rdb *redis.Client) error
	}{
		{"rlock.Lock", rlock.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return rlock.New(rdb, name).Lock(ctx)
		}},
		{"fairlock.Lock", fairlock.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return fairlock.New(rdb, name).Lock(ctx)
		}},
		{"rwlock.RLock", rwlock.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return rwlock.New(rdb, name+"-rw").RLock(ctx)
		}},
		{"semaphore.Acquire", semaphore.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return semaphore.New(rdb, sem).Acquire(ctx, 1)
		}},
		{"latch.TrySetCount", latch.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			_, err := latch.New(rdb, name).TrySetCount(ctx, 1)
			return err
		}},
		{"election.Campaign", election.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return election.New(rdb, name).Campaign(ctx, "me")
		}},
		{"multilock.Lock", multilock.ErrOldServer, func(ctx context.Context, rdb *redis.Client) error {
			return multilock.New(rlock.New(rdb, name)).Lock(ctx)
		}},
	}
	for _, contended := range []bool{false, true} {
		admin.FlushAll(ctx)
		if contended {
			// Another owner's hold (rlock and election keep it in
			// one hash) and a semaphore with no permit free: each
			// call would wait.
			admin.HSet(ctx, n.Lock(), "someone-else", 1)
			admin.PExpire(ctx, n.Lock(), time.Minute)
			admin.Set(ctx, keyspace.NewNames(sem).Lock(), 0, time.Minute)
		}
		before := keySnapshot(t, admin)
		admin.ConfigResetStat(ctx)
		for _, c := range calls {
			rdb := srv.NewClient(t)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			started := time.Now()
			err := c.call(cctx, rdb)
			cancel()
			if err == nil {
				t.Fatalf("%s (contended %v) on Redis %s: no error", c.what, contended, version)
			}
			msg := err.Error()
			if !errors.Is(err, c.public) || !strings.Contains(msg, "Redis "+version) || !strings.Contains(msg, "Redis "+script.MinVersion+" or later") {
				t.Fatalf("%s (contended %v) on Redis %s: %v; want an error naming both versions", c.what, contended, version, err)
			}
			if d := time.Since(started); d > 2*time.Second {
				t.Errorf("%s (contended %v) took %v to fail; want at once", c.what, contended, d)
			}
			t.Logf("%s (contended %v): %v", c.what, contended, err)
		}
		if after := keySnapshot(t, admin); !slices.Equal(before, after) {
			t.Fatalf("contended %v: keys changed:\nbefore %q\nafter  %q", contended, before, after)
		}
		// Each client ran the version script and sent nothing else (the
		// connection's own HELLO, CLIENT SETINFO and the admin's reads
		// aside): the keys above are unchanged, and nothing was
		// published or subscribed.
		stats := infoSection(t, admin, "commandstats")
		for _, cmd := range []string{"script", "publish", "subscribe", "psubscribe"} {
			if strings.Contains(stats, "cmdstat_"+cmd+":") {
				t.Fatalf("contended %v: the server ran %s:\n%s", contended, cmd, stats)
			}
		}
		if got := infoField(t, admin, "cmdstat_info"); !strings.HasPrefix(got, "calls=") {
			t.Fatalf("contended %v: no INFO reached the server:\n%s", contended, stats)
		}
	}
}

// TestServerCheckedOnce checks that a client on a recent server asks its
// version once, with a script and no INFO (a proxy closes the connection
// on INFO): a second and third script call send only themselves.
func TestServerCheckedOnce(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.NewClient(t)
	rdb := srv.NewClient(t)
	ctx := t.Context()
	k := lockKeys(redistest.UniqueName(t))
	admin.ConfigResetStat(ctx)
	for i, owner := range []string{"a", "b", "c"} {
		if i == 1 {
			// The first call checked the version and loaded its script.
			admin.ConfigResetStat(ctx)
		}
		if _, err := script.ReentrantTake(ctx, rdb, k, script.TakeArgs{ID: owner + ":1", Lease: time.Minute, Deadline: redistest.InTime(), Placed: true}).Result(); err != nil {
			t.Fatal(err)
		}
	}
	stats := infoSection(t, admin, "commandstats")
	// The admin's INFO commandstats is counted after it has run.
	if !strings.Contains(stats, "cmdstat_evalsha:calls=2,") || strings.Contains(stats, "cmdstat_eval:") || strings.Contains(stats, "cmdstat_info:") {
		t.Fatalf("want two EVALSHA, no EVAL and no INFO for the second and third script calls:\n%s", stats)
	}
}

// TestOldServerExported checks that every primitive package exports the
// error of an old server under one name, the same value everywhere, so
// that a caller can match it without importing an internal package.
func TestOldServerExported(t *testing.T) {
	err := fmt.Errorf("rlock: lock %q: %w", "x", &script.OldServerError{Version: "6.0.16"})
	for pkg, public := range map[string]error{
		"rlock": rlock.ErrOldServer, "rwlock": rwlock.ErrOldServer, "fairlock": fairlock.ErrOldServer,
		"semaphore": semaphore.ErrOldServer, "latch": latch.ErrOldServer, "election": election.ErrOldServer,
		"multilock": multilock.ErrOldServer,
	} {
		if public != script.ErrOldServer || !errors.Is(err, public) {
			t.Errorf("%s.ErrOldServer = %v: not the value an old server's error matches", pkg, public)
		}
	}
}

func TestTooOld(t *testing.T) {
	for v, old := range map[string]bool{
		"6.0.16": true, "6.2.14": true, "5.0.0": true,
		"7.0.0": false, "7.0.15": false, "7.2.4": false, "8.0.6": false, "10.0.0": false,
		"": false, "unknown": false,
	} {
		err := script.TooOld(v)
		if (err != nil) != old {
			t.Errorf("TooOld(%q) = %v, want old %v", v, err, old)
		}
		if err != nil && !errors.Is(err, script.ErrOldServer) {
			t.Errorf("TooOld(%q) = %v, does not match ErrOldServer", v, err)
		}
		var reply redis.Error
		if err != nil && !errors.As(err, &reply) {
			t.Errorf("TooOld(%q) = %v, not a redis.Error (a definite refusal)", v, err)
		}
	}
}

// keySnapshot lists every key with its type and serialized value.
func keySnapshot(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	for _, k := range redistest.Keys(t, rdb, "*") {
		dump, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k+"="+dump)
	}
	slices.Sort(out)
	return out
}

func infoSection(t *testing.T, rdb *redis.Client, section string) string {
	t.Helper()
	s, err := rdb.Info(t.Context(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// infoField returns a field of INFO (server and commandstats sections).
func infoField(t *testing.T, rdb *redis.Client, field string) string {
	t.Helper()
	for _, section := range []string{"server", "commandstats"} {
		for line := range strings.Lines(infoSection(t, rdb, section)) {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}
