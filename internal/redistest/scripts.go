package redistest

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"strings"
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

// ScriptSHA returns the SHA1 of the script in file of package lua, the
// name EVALSHA runs it by.
func ScriptSHA(t testing.TB, file string) string {
	t.Helper()
	src, err := lua.Source(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// RunsScript reports whether args run the script whose SHA1 is sha, by
// EVALSHA or by EVAL of its source.
func RunsScript(args []string, sha string) bool {
	if len(args) < 2 {
		return false
	}
	switch strings.ToUpper(args[0]) {
	case "EVALSHA":
		return strings.EqualFold(args[1], sha)
	case "EVAL":
		sum := sha1.Sum([]byte(args[1]))
		return hex.EncodeToString(sum[:]) == sha
	}
	return false
}

// ScriptCall returns a match, for Proxy.DropReply and Proxy.Hold, of a
// run of the script in file that declares key among its keys.
func ScriptCall(t testing.TB, file, key string) func(args []string) bool {
	sha := ScriptSHA(t, file)
	return func(args []string) bool { return RunsScript(args, sha) && IsScriptCall(args, key) }
}

// ProxiedServer returns a client to a shared server on which every script
// is loaded (see LoadScripts), a proxy in front of that server, and a
// client through the proxy whose commands give up when their ctx's
// deadline passes (ContextTimeoutEnabled), as a give-back bounded by its
// own timeout must for a test that holds it back.
func ProxiedServer(t testing.TB) (direct *redis.Client, proxy *Proxy, via *redis.Client) {
	t.Helper()
	srv := SharedServer(t)
	direct = srv.NewClient(t)
	LoadScripts(t, direct)
	proxy = NewProxy(t, srv.Addr())
	via = proxy.NewClient(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	return direct, proxy, via
}
