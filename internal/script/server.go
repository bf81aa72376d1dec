package script

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/redis/go-redis/v9"
)

// MinVersion is the oldest Redis release redisync's scripts and commands
// run on: 7.0. Below it, a release script's grant of a parked waiter
// (SET ... GET and GETDEL need 6.2), the refresh of a parked rwlock
// waiter's place (PEXPIRE ... GT needs 7.0) and every notification on a
// cluster (SPUBLISH needs 7.0) fail. Every Valkey release reports a Redis
// version of 7.2 and passes.
const MinVersion = "7.0"

// minMajor and minMinor are MinVersion as numbers.
const minMajor, minMinor = 7, 0

// ErrOldServer reports a server older than MinVersion. Nothing is sent
// to it after the check that found it.
var ErrOldServer = errors.New("redis server too old")

// OldServerError is the error of every script call on a server older than
// MinVersion. It names the server's version and the minimum, matches
// ErrOldServer, and counts as a reply of the server (redis.Error): a
// definite refusal, never retried, that changed nothing.
type OldServerError struct {
	Version string // the server's redis_version, such as "6.0.16"
}

func (e *OldServerError) Error() string {
	return fmt.Sprintf("%v: the server is Redis %s; redisync needs Redis %s or later (or Valkey)", ErrOldServer, e.Version, MinVersion)
}

// Is makes errors.Is(err, ErrOldServer) true.
func (e *OldServerError) Is(target error) bool { return target == ErrOldServer }

// RedisError marks the error as the server's answer (go-redis's redis.Error).
func (*OldServerError) RedisError() {}

// checked holds, per client, the outcome of its version check: a
// *serverCheck keyed by a weak pointer to the client, removed when the
// client is collected, so that the check keeps no client reachable.
var checked sync.Map

// serverCheck is one client's version check: done is closed once err is
// set (nil: the server is recent enough, or does not say).
type serverCheck struct {
	done chan struct{}
	err  error
}

// checkKey returns the key of c's check, and false for anything that is
// not a long-lived client (a single connection, a pipeline, a test's
// fake): those are not checked (a pinned connection is checked through
// its client: see CheckServer). With forget, it also arranges for the
// check to be forgotten once c is collected: once per client, when its
// check is settled, not on every script call.
func checkKey(c any, forget bool) (any, bool) {
	switch c := c.(type) {
	case *redis.Client:
		return weakKey(c, forget), true
	case *redis.ClusterClient:
		return weakKey(c, forget), true
	case *redis.Ring:
		return weakKey(c, forget), true
	}
	return nil, false
}

// weakKey is checkKey for client c of type T. Its cleanup captures
// nothing, so a call without forget allocates nothing.
func weakKey[T any](c *T, forget bool) weak.Pointer[T] {
	k := weak.Make(c)
	if forget {
		runtime.AddCleanup(c, func(k weak.Pointer[T]) { checked.Delete(k) }, k)
	}
	return k
}

// CheckServer returns an *OldServerError when the server behind c is older
// than MinVersion, and nil otherwise. It asks the server once per client,
// on its first script call, with a script (see versionSrc),
// and keeps the answer for as long as the client lives; later calls cost
// a map lookup. A server that refuses the script (an ACL rule) is taken as
// recent enough; a check that got no answer (a network error, ctx ended)
// is made again by the next call.
func CheckServer(ctx context.Context, c any) error {
	key, ok := checkKey(c, false)
	if !ok {
		return nil
	}
	if v, ok := checked.Load(key); ok {
		return v.(*serverCheck).wait(ctx)
	}
	sc := &serverCheck{done: make(chan struct{})}
	if v, loaded := checked.LoadOrStore(key, sc); loaded {
		return v.(*serverCheck).wait(ctx)
	}
	version, err := serverVersion(ctx, c.(Processor))
	var reply redis.Error
	switch {
	case err == nil:
		sc.err = tooOld(version)
		checkKey(c, true)
	case errors.As(err, &reply):
		// The server answered, refusing the script: keep "recent enough".
		checkKey(c, true)
	default:
		checked.Delete(key) // no answer: the next call asks again
	}
	close(sc.done)
	return sc.err
}

// wait returns the outcome of a check another call is making, or nil
// when ctx ends first (the script call then reports ctx's error).
func (sc *serverCheck) wait(ctx context.Context) error {
	select {
	case <-sc.done:
		return sc.err
	case <-ctx.Done():
		return nil
	}
}

// versionSrc reads the server's version. It is a script with a key,
// not INFO, because a proxy in front of the server (twemproxy) forwards
// scripts with keys but closes the connection on INFO, and an ACL rule
// may refuse INFO. redis.REDIS_VERSION exists from Redis 7.0 (and in
// every Valkey); on an older server the script falls back to INFO inside
// Lua, which a proxy does not see. It changes nothing, so it is no state
// change of package lua.
const versionSrc = `if redis.REDIS_VERSION then return redis.REDIS_VERSION end
local ok, info = pcall(redis.call, 'INFO', 'server')
return ok and string.match(info, 'redis_version:([%w%.%-]+)') or ''`

// versionKey routes the version check: a key no primitive uses, which
// the script does not read, so that the check is never taken for a call
// on a primitive's keys (a lost reply, a cost counted per key).
const versionKey = "redisync:version"

// serverVersion returns the server's version ("" when it does not say:
// such a server is not refused). The command is sent once: a lost reply
// makes the next call ask again, not go-redis. It is sent as EVAL, with
// its source: once per client, it is not worth a NOSCRIPT round trip.
func serverVersion(ctx context.Context, c Processor) (string, error) {
	// Bounded by ctx on any client (Process): a caller's deadline holds
	// while the server does not answer, as for the script itself.
	return Process(ctx, c, "eval", versionSrc, 1, versionKey).Text()
}

// tooOld returns an *OldServerError when version (major.minor.patch) is
// below MinVersion, and nil when it is not or cannot be read.
func tooOld(version string) error {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return nil
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return nil
	}
	if major < minMajor || major == minMajor && minor < minMinor {
		return &OldServerError{Version: version}
	}
	return nil
}
