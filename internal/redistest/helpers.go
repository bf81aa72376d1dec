package redistest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Mini starts an in-process miniredis (listening on 127.0.0.1) and a go-redis
// client for it; both are closed when t ends.
func Mini(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	mr, err := miniredis.Run()
	if err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
	}
	t.Cleanup(mr.Close)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return mr, rdb
}

// maxNameLen bounds the part of UniqueName taken from the test name.
const maxNameLen = 40

var nameSeq atomic.Uint64

// UniqueName returns a short name that no other call in this test binary
// returns, built from the end of t.Name() (characters other than letters,
// digits, '.', '_' and '-' become '_', so there are no spaces, slashes or
// braces) and a counter, e.g. "TestLock_renew-7".
func UniqueName(t testing.TB) string {
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > maxNameLen {
		name = name[len(name)-maxNameLen:]
	}
	return name + "-" + strconv.FormatUint(nameSeq.Add(1), 10)
}

// Holders returns the fields of the lock hash at key without the attempt
// marks the lock scripts keep next to each hold count (fields that begin
// with "@"): the holders and, for a read-write lock, its mode.
func Holders(ctx context.Context, rdb redis.Cmdable, key string) map[string]string {
	all := rdb.HGetAll(ctx, key).Val()
	for f := range all {
		if strings.HasPrefix(f, "@") {
			delete(all, f)
		}
	}
	return all
}

// Keys returns the keys matching pattern, sorted: on every master of a
// cluster, or on the one server. It fails t on an error, or for a client
// of another kind.
func Keys(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	var keys []string
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(context.Background(), scan)
	case *redis.Client:
		err = scan(context.Background(), c)
	default:
		t.Fatalf("redistest: Keys: client %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// InTime returns a deadline for a script run now by a test (see
// exactly.RequestWindow): five seconds ahead on the local clock, which is
// the server's, both on this machine. The window is written out here
// because package internal cannot be imported: internal/hub's own tests
// import this package.
func InTime() int64 { return time.Now().Add(5 * time.Second).UnixMilli() }

// HeldBy returns the level that a hold of owner id owner has in the lock
// hash at key: the value of the field named by one of its hold ids
// ("<owner>:<n>"), "" when owner holds nothing there.
func HeldBy(ctx context.Context, rdb redis.Cmdable, key, owner string) string {
	for f, v := range Holders(ctx, rdb, key) {
		if strings.HasPrefix(f, owner+":") && !strings.Contains(f[len(owner)+1:], ":") {
			return v
		}
	}
	return ""
}
