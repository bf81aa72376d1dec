package redistest

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

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
