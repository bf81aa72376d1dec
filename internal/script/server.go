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

// MinVersion is the oldest Redis the scripts run on (PEXPIRE GT, SPUBLISH).
const MinVersion = "7.0"

const minMajor, minMinor = 7, 0

// ErrOldServer reports a server older than MinVersion.
var ErrOldServer = errors.New("redis server too old")

// OldServerError is every script call's error on a server older than
// MinVersion. It is a redis.Error: a definite refusal that changed nothing.
type OldServerError struct {
	Version string // redis_version, such as "6.0.16"
}

func (e *OldServerError) Error() string {
	return fmt.Sprintf("%v: the server is Redis %s; redisync needs Redis %s or later (or Valkey)", ErrOldServer, e.Version, MinVersion)
}

// Is makes errors.Is(err, ErrOldServer) true.
func (e *OldServerError) Is(target error) bool { return target == ErrOldServer }

// RedisError makes the error a redis.Error.
func (*OldServerError) RedisError() {}

// checked maps a weak pointer to a client to its *serverCheck, deleted
// when the client is collected.
var checked sync.Map

// serverCheck is one client's version check; done closes once err is set.
type serverCheck struct {
	done chan struct{}
	err  error
}

// checkKey returns the key of c's check, false for what is not a client.
// With forget, the check is deleted once c is collected.
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

// weakKey is checkKey for a *T. The cleanup captures nothing, so a call
// without forget allocates nothing.
func weakKey[T any](c *T, forget bool) weak.Pointer[T] {
	k := weak.Make(c)
	if forget {
		runtime.AddCleanup(c, func(k weak.Pointer[T]) { checked.Delete(k) }, k)
	}
	return k
}

// CheckServer returns an *OldServerError when the server behind c is older
// than MinVersion, asking once per client. A refused check (ACL) passes; a
// check without an answer is asked again.
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
	// An EVAL, once per client: not worth a NOSCRIPT round trip.
	version, err := Process(ctx, c.(Processor), "eval", versionSrc, 1, versionKey).Text()
	var reply redis.Error
	switch {
	case err == nil:
		sc.err = tooOld(version)
		checkKey(c, true)
	case errors.As(err, &reply):
		checkKey(c, true) // refused by the server: recent enough
	default:
		checked.Delete(key)
	}
	close(sc.done)
	return sc.err
}

// wait returns the outcome of a check another call is making, or nil
// when ctx ends first (the script call then fails on ctx).
func (sc *serverCheck) wait(ctx context.Context) error {
	select {
	case <-sc.done:
		return sc.err
	case <-ctx.Done():
		return nil
	}
}

// versionSrc reads the version ("" passes). A script, as a proxy or an
// ACL may refuse INFO.
const versionSrc = `if redis.REDIS_VERSION then return redis.REDIS_VERSION end
local ok, info = pcall(redis.call, 'INFO', 'server')
return ok and string.match(info, 'redis_version:([%w%.%-]+)') or ''`

// versionKey routes the check; no primitive uses it.
const versionKey = "redisync:version"

// tooOld returns an *OldServerError when version is below MinVersion.
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
