package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/rlock"
)

// locker is what the scenarios need from a lock: one handle, used by one
// worker at a time.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// contender is one lock library, configured as the scenarios compare it.
type contender struct {
	name string
	// newLocker returns a new handle on the lock called key, on rdb.
	newLocker func(rdb *redis.Client, key string) locker
	// waits is false for the baselines, which cannot wait for a lock, and
	// for the variants measured only for what they add to an uncontended
	// pair: they run in the uncontended scenarios only.
	waits bool
	// bare marks the baseline the uncontended times are compared with.
	bare bool
	// parked, for a library that waits on pub/sub, waits until a waiter
	// on key is parked; nil for pollers.
	parked func(ctx context.Context, ctl *redis.Client, key string) error
	// ownClient marks a library that talks to Redis through a client of
	// its own, not the go-redis client it is given: the go-redis hooks do
	// not see its round trips, so the tables leave them out.
	ownClient bool
	// close, if set, releases what the library's handles share; it is
	// called after each scenario, when the go-redis clients are closed.
	close func()
}

// pickContenders keeps the contenders whose name matches the regexp
// libs.
func pickContenders(libs string) error {
	re, err := regexp.Compile(libs)
	if err != nil {
		return fmt.Errorf("-libs: %w", err)
	}
	kept := contenders[:0]
	for _, c := range contenders {
		if re.MatchString(c.name) {
			kept = append(kept, c)
		}
	}
	contenders = kept
	return nil
}

// leaseTTL is the lease given to the libraries without a watchdog. It is
// long enough that no hold of the scenarios expires.
const leaseTTL = 10 * time.Second

var contenders = []contender{
	{name: "redisync rlock", newLocker: newRedisync, waits: true, parked: redisyncParked},
	// The same lock used as its docs advise: one handle per process (here,
	// per client) shared by its goroutines, whose holds pass between them
	// without a round trip a few times before going to another process.
	{name: usShared, newLocker: newRedisyncShared, waits: true, parked: redisyncParked},
	{name: "redisync fairlock", newLocker: newFairlock, waits: true, parked: redisyncParked},
	{name: "redsync", newLocker: newRedsync, waits: true},
	{name: "redislock 10ms", newLocker: newRedislock(10 * time.Millisecond), waits: true},
	{name: "redislock 1ms", newLocker: newRedislock(time.Millisecond), waits: true},
	// A rueidislock waiter waits in the process for a client-side caching
	// invalidation of the key; Redis only shows how many keys its clients
	// track in all (INFO tracking_total_items), not that a waiter on this
	// key is parked, so it has no parked check: its one failed attempt
	// takes a round trip, well within the handoff's 20 ms before unlocking.
	{name: "rueidislock", newLocker: newRueidislock, waits: true, ownClient: true, close: closeRueidislock},
	// Not a library: a minimal strictly fair lock through Redis, a
	// reference for redisync fairlock (see bareFIFO).
	{name: bareFIFO, newLocker: newBareFIFO, waits: true, parked: fifoParked, close: closeBareFIFO},
	{name: scriptsAlone, newLocker: newScriptsOnly},
	// rlock with fencing tokens, for what a token adds to the uncontended
	// pair (issue 41); its waits are rlock's, measured without it.
	{name: usFenced, newLocker: newRedisyncFenced},
	// Not a library: the Redisson algorithm's two scripts, a reference for
	// rlock's server time (see redissonAlg). It cannot wait.
	{name: redissonAlg, newLocker: newRedissonAlg},
	// Not a library: the least two scripts cost that make rlock's checks
	// (see guardedFloor). It cannot wait.
	{name: guardedFloor, newLocker: newGuardedFloor},
	{name: bareLk, newLocker: newBare, bare: true},
}

func newRedisync(rdb *redis.Client, key string) locker { return rlock.New(rdb, key) }

func newRedisyncFenced(rdb *redis.Client, key string) locker {
	return rlock.New(rdb, key, rlock.WithFencing())
}

// perClient keeps one V per key (a go-redis client, or a client and a
// lock), made on first use, for what the handles made on one client
// share.
type perClient[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns k's V, made by newV if there is none yet. A V that newV
// fails to make is not kept.
func (p *perClient[K, V]) get(k K, newV func() (V, error)) (V, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[k]; ok {
		return v, nil
	}
	v, err := newV()
	if err != nil {
		return v, err
	}
	if p.m == nil {
		p.m = map[K]V{}
	}
	p.m[k] = v
	return v, nil
}

// drain forgets every V, passing each to end.
func (p *perClient[K, V]) drain(end func(V)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.m {
		end(v)
		delete(p.m, k)
	}
}

// sharedHandles holds the one rlock handle per client and key of
// newRedisyncShared.
var sharedHandles perClient[sharedKey, *rlock.Mutex]

type sharedKey struct {
	rdb *redis.Client
	key string
}

// newRedisyncShared returns the handle on key that every worker on rdb
// shares.
func newRedisyncShared(rdb *redis.Client, key string) locker {
	m, _ := sharedHandles.get(sharedKey{rdb, key}, func() (*rlock.Mutex, error) { return rlock.New(rdb, key), nil })
	return m
}

func newFairlock(rdb *redis.Client, key string) locker { return fairlock.New(rdb, key) }

// redisyncParked waits until a waiter of the rlock or fairlock called key
// stands in line with its own channel subscribed, as the library names
// them (redisync:{name}:queue, redisync:{name}:chan:<owner id>).
func redisyncParked(ctx context.Context, ctl *redis.Client, key string) error {
	tag := "redisync:{" + key + "}"
	return poll(ctx, 10*time.Second, func() bool {
		line := ctl.LRange(ctx, tag+":queue", 0, 0).Val()
		if len(line) == 0 {
			return false
		}
		if proxied {
			return true // in line, and polling: nothing subscribes
		}
		ch := tag + ":chan:" + line[0]
		return ctl.PubSubNumSub(ctx, ch).Val()[ch] > 0
	})
}

// proxied is -proxy: the libraries reach the server through twemproxy,
// which refuses subscriptions, so a parked redisync waiter is one in line.
var proxied bool

// redsyncLocker is a redsync mutex with default options, except that it
// retries until ctx is done instead of giving up after 32 tries.
type redsyncLocker struct{ m *redsync.Mutex }

func newRedsync(rdb *redis.Client, key string) locker {
	rs := redsync.New(goredis.NewPool(rdb))
	return redsyncLocker{rs.NewMutex(key, redsync.WithTries(math.MaxInt32))}
}

func (l redsyncLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }

func (l redsyncLocker) Unlock(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock failed")
	}
	return err
}

// redislockLocker obtains a bsm/redislock lock, retrying with a linear
// backoff.
type redislockLocker struct {
	c    *redislock.Client
	key  string
	opt  *redislock.Options
	held *redislock.Lock
}

func newRedislock(backoff time.Duration) func(*redis.Client, string) locker {
	return func(rdb *redis.Client, key string) locker {
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(backoff)}
		return &redislockLocker{c: redislock.New(rdb), key: key, opt: opt}
	}
}

func (l *redislockLocker) Lock(ctx context.Context) error {
	// Without a ctx deadline Obtain gives up after the TTL: ours is longer
	// than any wait of the scenarios.
	lk, err := l.c.Obtain(ctx, l.key, leaseTTL, l.opt)
	if err != nil {
		return err
	}
	l.held = lk
	return nil
}

func (l *redislockLocker) Unlock(ctx context.Context) error {
	err := l.held.Release(ctx)
	l.held = nil
	return err
}

// rueidislockers holds one rueidislock.Locker, each with a rueidis client
// of its own, per go-redis client that handles were made on: the handles
// of one go-redis client share a Locker, as the other libraries' handles
// share their client's pool.
var rueidislockers perClient[*redis.Client, rueidislock.Locker]

// rueidislockLocker is a handle on a rueidislock lock; Unlock cancels what
// WithContext returned.
type rueidislockLocker struct {
	l      rueidislock.Locker
	err    error // from NewLocker; Lock returns it
	key    string
	parent context.Context // the ctx of the hold's Lock call
	held   context.Context // canceled by rueidislock if the lock is lost
	cancel context.CancelFunc
}

// newRueidislock returns a handle on the Locker of rdb, made on first use
// for the server rdb talks to, as rueidislock's docs say for one server:
// KeyMajority 1, and NOLOOP tracking (the server is at least 7.0.5). The
// key validity, its extension and the invalidations that wake waiters
// are rueidislock's defaults.
func newRueidislock(rdb *redis.Client, key string) locker {
	l, err := rueidislockers.get(rdb, func() (rueidislock.Locker, error) {
		opt := rdb.Options()
		return rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{
				InitAddress: []string{opt.Addr},
				Username:    opt.Username,
				Password:    opt.Password,
				SelectDB:    opt.DB,
			},
			KeyMajority:    1,
			NoLoopTracking: true,
		})
	})
	if err != nil {
		return &rueidislockLocker{err: fmt.Errorf("rueidislock: %w", err)}
	}
	return &rueidislockLocker{l: l, key: key}
}

// closeRueidislock closes the Lockers and their rueidis clients.
func closeRueidislock() { rueidislockers.drain(rueidislock.Locker.Close) }

func (l *rueidislockLocker) Lock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	held, cancel, err := l.l.WithContext(ctx, l.key)
	if err != nil {
		return err
	}
	l.parent, l.held, l.cancel = ctx, held, cancel
	return nil
}

func (l *rueidislockLocker) Unlock(context.Context) error {
	if l.cancel == nil {
		return fmt.Errorf("rueidislock: unlock %q: not held", l.key)
	}
	// The hold's ctx ends early when the lock is lost, or when the ctx
	// given to Lock ends: only the first is an error.
	lost := l.held.Err() != nil && l.parent.Err() == nil
	l.cancel() // releases the key and waits until it is released
	l.parent, l.held, l.cancel = nil, nil, nil
	if lost {
		return fmt.Errorf("rueidislock: unlock %q: lock lost", l.key)
	}
	return nil
}

// bareLocker is the least a Redis lock can do: SET NX PX to take it, a
// compare-and-delete script to release it. It cannot wait.
type bareLocker struct {
	rdb   *redis.Client
	key   string
	token string
}

var bareRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

var errBusy = errors.New("lock is taken")

func newBare(rdb *redis.Client, key string) locker {
	return &bareLocker{rdb: rdb, key: key, token: rand.Text()}
}

func (l *bareLocker) Lock(ctx context.Context) error {
	ok, err := l.rdb.SetNX(ctx, l.key, l.token, leaseTTL).Result()
	if err == nil && !ok {
		err = errBusy
	}
	return err
}

func (l *bareLocker) Unlock(ctx context.Context) error {
	n, err := bareRelease.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	if err == nil && n != 1 {
		err = fmt.Errorf("bare: unlock %q: not held", l.key)
	}
	return err
}

// scriptsOnly runs rlock's acquire and unlock scripts straight from
// go-redis, without the rlock package around them: the uncontended
// scenario's control for what the scripts cost Redis, apart from what the
// library costs in Go.
type scriptsOnly struct {
	rdb   *redis.Client
	keys  script.LockKeys
	owner string
}

func newScriptsOnly(rdb *redis.Client, key string) locker {
	tag := "redisync:{" + key + "}" // as the library names its keys
	keys := script.LockKeys{Lock: tag, Fence: tag + ":fence", Queue: tag + ":queue", Places: tag + ":place:", Waiter: tag + ":chan:", Channel: tag + ":chan", Patience: rlock.WaiterTimeout}
	return &scriptsOnly{rdb: rdb, keys: keys, owner: rand.Text()}
}

func (l *scriptsOnly) Lock(ctx context.Context) error {
	res, err := script.ReentrantTake(ctx, l.rdb, l.keys, script.TakeArgs{ID: l.owner + ":1", Lease: rlock.DefaultWatchdogTimeout, Deadline: time.Now().Add(5 * time.Second).UnixMilli()}).Result()
	if err == nil && !res.OK {
		err = errBusy
	}
	return err
}

func (l *scriptsOnly) Unlock(ctx context.Context) error {
	u, err := script.ReentrantUnlock(ctx, l.rdb, l.keys, script.ReleaseArgs{ID: l.owner + ":1", Lease: rlock.DefaultWatchdogTimeout, GrantLease: time.Second}).Result()
	if err == nil && u.Holds != 0 {
		err = fmt.Errorf("scripts: unlock %q: %d", l.keys.Lock, u.Holds)
	}
	return err
}
