package fairlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/watchdog"
	"github.com/redisync/redisync/lua"
)

// ErrNotHeld is returned by Unlock when the handle does not hold the lock.
// It is the same value in every redisync package.
var ErrNotHeld = internal.ErrNotHeld

// ErrLost is the reason a hold was lost, passed to the WithOnLost hook.
var ErrLost = internal.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type.
var ErrWrongType = internal.ErrWrongType

// cleanupTimeout bounds each call that tidies up after a cancelled ctx.
const cleanupTimeout = time.Second

// Mutex is a fair (first come, first served) reentrant distributed mutex.
// A Mutex is a handle with its own owner id: Lock on a handle that holds
// the lock re-enters it. Goroutines that must exclude each other use
// separate handles. A Mutex is safe for concurrent use.
type Mutex struct {
	rdb     redis.UniversalClient
	name    string
	keys    lua.FairKeys
	channel string // this handle's wake-up channel
	owner   string
	sharded bool
	cfg     config

	// op serializes this handle's state-changing scripts, so that the local
	// view of the hold matches Redis. It is taken for one round trip, never
	// across a wait.
	op *semaphore.Weighted

	mu   sync.Mutex // protects hold
	hold *hold      // the current hold; nil when none
}

// hold is one continuous hold of the lock by the handle.
type hold struct {
	count  int64
	token  uint64
	done   chan struct{}
	client *internal.Client
	wd     *watchdog.Hold
	ends   []context.CancelFunc // contexts of Do to cancel when the hold ends
}

// New returns a handle on the lock called name. It does no I/O. It panics
// if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Mutex {
	if rdb == nil {
		panic("fairlock: New with nil redis client")
	}
	if name == "" {
		panic("fairlock: New with empty lock name")
	}
	cfg := config{watchdogTimeout: DefaultWatchdogTimeout, waiterTimeout: DefaultWaiterTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	n := internal.NewNames(name)
	owner := internal.NewOwnerID()
	return &Mutex{
		rdb:  rdb,
		name: name,
		keys: lua.FairKeys{
			Lock:     n.Lock(),
			Queue:    n.Queue(),
			Timeouts: n.Timeouts(),
			Fence:    n.Fence(),
			Waiter:   n.WaiterChannel(""),
		},
		channel: n.WaiterChannel(owner),
		owner:   owner,
		sharded: internal.Sharded(rdb),
		cfg:     cfg,
		op:      semaphore.NewWeighted(1),
	}
}

// Name returns the name of the lock.
func (m *Mutex) Name() string { return m.name }

// Lock locks m. If the lock is held by another handle, or other handles
// already wait for it, Lock joins the end of the line and waits until every
// waiter before it has had its turn and the lock is released, or until ctx
// is done. While it waits it keeps its place alive (see WithWaiterTimeout).
// On failure it returns an error wrapping ctx.Err() or the Redis error, and
// leaves nothing behind: no hold, no place in line, no subscription; the
// waiter behind it moves up and, if the lock is free, is woken.
func (m *Mutex) Lock(ctx context.Context) error {
	c := internal.Acquire(m.rdb)
	defer c.Release()
	err := internal.Wait(ctx, c.Hub, m.channel, m.cfg.maxSleep(), m.waitInLine)
	if err != nil {
		m.leave(ctx)
	}
	return m.wrap("lock", err)
}

// TryLock makes one attempt to lock m. It reports false and no error when
// another handle holds the lock or waits for it: TryLock never jumps the
// line, and never joins it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	ok, _, err := m.attempt(ctx, 0)
	return ok, m.wrap("lock", err)
}

// waitInLine is the attempt of a waiting Lock: it joins the line or
// refreshes its place there.
func (m *Mutex) waitInLine(ctx context.Context) (bool, time.Duration, error) {
	return m.attempt(ctx, m.cfg.waiterTimeout)
}

// attempt runs the acquire script once; with patience > 0 the handle joins
// or keeps its place in line when it does not get the lock.
func (m *Mutex) attempt(ctx context.Context, patience time.Duration) (bool, time.Duration, error) {
	if err := m.op.Acquire(ctx, 1); err != nil {
		return false, 0, err
	}
	defer m.op.Release(1)
	holds := m.holds()
	sent := time.Now()
	res, err := lua.FairAcquire(ctx, m.rdb, m.keys, m.owner, m.cfg.lease(), m.cfg.fencing, holds, patience, m.sharded).Result()
	if err != nil {
		if ctx.Err() != nil {
			// The script may have run: give back what it may have taken.
			// A place in line it may have taken is left by Lock.
			m.undo(ctx, holds+1)
		}
		return false, 0, err
	}
	if !res.OK {
		return false, res.Wait, nil
	}
	m.acquired(res, sent)
	return true, 0, nil
}

// undo releases the hold level an attempt with an unknown outcome may have
// taken. The unlock script changes nothing unless the hold count is exactly
// the one the attempt would have produced.
func (m *Mutex) undo(ctx context.Context, expect int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	// The local view is untouched: it was not updated for the attempt.
	_, _ = lua.FairUnlock(ctx, m.rdb, m.keys, m.owner, m.cfg.lease(), m.sharded, expect).Result()
}

// leave takes the handle out of the line after a failed Lock. The caller's
// ctx is usually done, so the call runs without its cancellation; a failed
// call is tried once more. If both fail (Redis unreachable), the place is
// dropped by the server once its deadline passes.
func (m *Mutex) leave(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for range 2 {
		lctx, cancel := context.WithTimeout(ctx, cleanupTimeout/2)
		_, err := lua.FairLeave(lctx, m.rdb, m.keys, m.owner, m.sharded).Result()
		cancel()
		if err == nil || internal.IsWrongType(err) {
			return
		}
	}
}

// holds returns the local hold count.
func (m *Mutex) holds() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return 0
	}
	return m.hold.count
}

// acquired records a successful acquisition sent at sent.
func (m *Mutex) acquired(res lua.Acquired, sent time.Time) {
	m.mu.Lock()
	h := m.hold
	if h != nil && res.Holds > 1 {
		h.count = res.Holds
		h.wd.Touch(sent)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	if h != nil {
		// Redis says this is a first acquisition: the previous hold was
		// lost before the watchdog noticed.
		m.end(h, ErrLost)
	}
	h = &hold{count: res.Holds, token: res.Token, done: make(chan struct{}), client: internal.Acquire(m.rdb)}
	h.wd = h.client.Watchdog.Add(m.entry(h), sent)
	m.mu.Lock()
	m.hold = h
	m.mu.Unlock()
}

func (m *Mutex) entry(h *hold) watchdog.Entry {
	e := watchdog.Entry{
		Lease: m.cfg.lease(),
		Lost: func(err error) {
			m.end(h, fmt.Errorf("%w: %w", ErrLost, err))
		},
	}
	if m.cfg.leaseTime == 0 {
		e.Renew = func(ctx context.Context, s redis.Scripter) func() (bool, error) {
			return lua.FairRenew(ctx, s, m.keys, m.owner, e.Lease, m.sharded).Result
		}
	}
	return e
}
