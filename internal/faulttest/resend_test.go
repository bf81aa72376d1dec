package faulttest_test

import (
	"context"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// resend is what one row of the lost-reply table gets: a client whose
// connection goes through the proxy (go-redis resends what it may), a
// direct one to check Redis, and drop, which arms the loss of the next
// reply of the row's script on the row's lock and returns the channel
// closed once it was lost.
type resend struct {
	via, direct *redis.Client
	name        string
	drop        func() <-chan struct{}
	// dropScript is drop for another script file of the same lock.
	dropScript func(file string) <-chan struct{}
}

// lostReplyRows lists, per script file, an operation that runs it and
// checks what it reports and leaves in Redis after the script's reply
// was lost (the script ran; the client saw the connection break). Every
// .lua file of the module must have a row: TestEveryScriptResent fails
// otherwise, so a new script cannot be added without one.
var lostReplyRows = map[string]func(t *testing.T, r resend){
	"rlock_acquire.lua": lockRow(newRlock),
	"rlock_unlock.lua":  grantingUnlockRow(newRlock),
	"rlock_renew.lua":   renewRow(newRlock),
	"rlock_forceunlock.lua": forceRow(func(rdb redis.UniversalClient, name string) forcer {
		return rlock.New(rdb, name)
	}),
	"fairlock_acquire.lua": lockRow(newFairlock),
	"fairlock_unlock.lua":  grantingUnlockRow(newFairlock),
	"fairlock_renew.lua":   renewRow(newFairlock),
	"fairlock_forceunlock.lua": forceRow(func(rdb redis.UniversalClient, name string) forcer {
		return fairlock.New(rdb, name)
	}),
	"fairlock_leave.lua": leaveRow(func(rdb redis.UniversalClient, name string) forcer {
		return fairlock.New(rdb, name)
	}),
	"rlock_leave.lua": leaveRow(func(rdb redis.UniversalClient, name string) forcer {
		return rlock.New(rdb, name)
	}),
	"rwlock_writelock.lua":   lockRow(newWriter),
	"rwlock_writeunlock.lua": unlockRow(newWriter),
	"rwlock_readlock.lua":    lockRow(newReader),
	"rwlock_readunlock.lua":  unlockRow(newReader),
	"rwlock_renew.lua":       renewRow(newWriter),
	"rwlock_withdraw.lua":    withdrawRow,
	"rwlock_forceunlock.lua": forceRow(func(rdb redis.UniversalClient, name string) forcer {
		return rwlock.New(rdb, name)
	}),
	"election_proclaim.lua": proclaimRow,
}

func TestEveryScriptResent(t *testing.T) {
	files, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, f := range files {
		if lostReplyRows[f] == nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("scripts without a lost-reply row: %v", missing)
	}
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	// Every script is known to the server before the rows run: otherwise
	// a row's first EVALSHA is refused with NOSCRIPT, and a reply dropped
	// then is that refusal's, of a script that never ran, so the row
	// would not test a lost reply at all.
	redistest.LoadScripts(t, direct)
	proxy := redistest.NewProxy(t, srv.Addr())
	via := proxy.NewClient(t) // go-redis default: resends what it may
	for _, f := range files {
		if lostReplyRows[f] == nil {
			continue
		}
		t.Run(strings.TrimSuffix(f, ".lua"), func(t *testing.T) {
			name := redistest.UniqueName(t)
			dropScript := func(file string) <-chan struct{} {
				return proxy.DropReply(scriptOn(t, file, name))
			}
			drop := func() <-chan struct{} { return dropScript(f) }
			lostReplyRows[f](t, resend{via: via, direct: direct, name: name, drop: drop, dropScript: dropScript})
			leftovers(t, direct, name)
		})
	}
}

// scriptOn returns a proxy match for the script file run on the lock
// called name: one of its arguments carries the lock's hash tag.
func scriptOn(t *testing.T, file, name string) func(args []string) bool {
	sha := redistest.ScriptSHA(t, file)
	return func(args []string) bool {
		return redistest.RunsScript(args, sha) && slices.ContainsFunc(args[2:], func(a string) bool { return strings.Contains(a, "{"+name+"}") })
	}
}

func mustDropped(t *testing.T, dropped <-chan struct{}) {
	t.Helper()
	select {
	case <-dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("no reply was dropped: the fault was not injected")
	}
}

// leftovers fails t if any key of the lock called name is left in Redis,
// receipts included.
func leftovers(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	redistest.WaitFor(t, 5*time.Second, func() bool {
		keys, _ := rdb.Keys(t.Context(), "*{"+name+"}*").Result()
		return len(keys) == 0
	})
}

// handle is one side of a lock: Lock and Unlock of a mutex, or of one
// mode of a read-write lock.
type handle struct {
	lock, unlock func(ctx context.Context) error
	do           func(ctx context.Context, fn func(ctx context.Context) error) error // re-entry travels in its ctx
	done         func() <-chan struct{}
	levels       func(ctx context.Context, rdb *redis.Client) int64 // in Redis
}

func newRlock(rdb redis.UniversalClient, name string, opts ...time.Duration) handle {
	var o []rlock.Option
	if len(opts) > 0 {
		o = append(o, rlock.WithWatchdogTimeout(opts[0]))
	}
	m := rlock.New(rdb, name, o...)
	return handle{m.Lock, m.Unlock, m.Do, m.Done, hashLevels(name)}
}

func newFairlock(rdb redis.UniversalClient, name string, opts ...time.Duration) handle {
	var o []fairlock.Option
	if len(opts) > 0 {
		o = append(o, fairlock.WithWatchdogTimeout(opts[0]))
	}
	m := fairlock.New(rdb, name, o...)
	return handle{m.Lock, m.Unlock, m.Do, m.Done, hashLevels(name)}
}

func newWriter(rdb redis.UniversalClient, name string, opts ...time.Duration) handle {
	rw := newRW(rdb, name, opts)
	return handle{rw.Lock, rw.Unlock, rw.Do, rw.Done, rwLevels(name, "w:")}
}

func newReader(rdb redis.UniversalClient, name string, opts ...time.Duration) handle {
	rw := newRW(rdb, name, opts)
	return handle{rw.RLock, rw.RUnlock, rw.RDo, rw.Done, rwLevels(name, "r:")}
}

func newRW(rdb redis.UniversalClient, name string, opts []time.Duration) *rwlock.RWMutex {
	var o []rwlock.Option
	if len(opts) > 0 {
		o = append(o, rwlock.WithWatchdogTimeout(opts[0]))
	}
	return rwlock.New(rdb, name, o...)
}

// hashLevels sums the hold counts of a lock hash whose fields are owners.
func hashLevels(name string) func(ctx context.Context, rdb *redis.Client) int64 {
	return rwLevels(name, "")
}

// rwLevels sums the hold counts of the fields of a lock hash that start
// with prefix (a read-write lock's "w:" or "r:"). Fields starting with "@"
// hold the marks of attempts, not counts, whatever their value looks like;
// a read field holds the tag of its hold's one read level.
func rwLevels(name, prefix string) func(ctx context.Context, rdb *redis.Client) int64 {
	return func(ctx context.Context, rdb *redis.Client) int64 {
		var n int64
		for f, v := range rdb.HGetAll(ctx, mainKey(name)).Val() {
			if strings.HasPrefix(f, "@") {
				continue
			}
			if strings.HasPrefix(f, "r:") {
				v = "1"
			}
			if c, err := strconv.ParseInt(v, 10, 64); err == nil && strings.HasPrefix(f, prefix) {
				n += c
			}
		}
		return n
	}
}

func newRWWriter(rdb redis.UniversalClient, name string) *rwlock.RWMutex {
	return rwlock.New(rdb, name)
}
