package redistest

import (
	"io/fs"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// LoadScripts loads every script of package lua on the server of rdb, so
// that a test's first EVALSHA of each runs rather than being refused with
// NOSCRIPT: a reply a test drops, or a command it holds and delivers, is
// then that of a script that ran.
func LoadScripts(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	files, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := lua.Source(f)
		if err == nil {
			err = rdb.ScriptLoad(t.Context(), src).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
