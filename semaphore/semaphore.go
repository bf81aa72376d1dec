package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/lua"
)

// ErrNotHeld is returned by Leased.Release for a permit id that holds no
// permit. It is the same value in every redisync package.
var ErrNotHeld = internal.ErrNotHeld

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type or content.
var ErrWrongType = internal.ErrWrongType

// ErrNegative is matched by errors for a negative permit count or lease.
// Nothing is changed in Redis.
var ErrNegative = errors.New("negative argument")

// Semaphore is a distributed counting semaphore. Its permits are not owned:
// any handle, in any process, may release permits it never acquired, and
// waiters are not served in arrival order. A Semaphore is safe for
// concurrent use.
type Semaphore struct {
	rdb     redis.UniversalClient
	name    string
	names   internal.Names
	keys    lua.SemaphoreKeys
	sharded bool
	cfg     config
}

// New returns a handle on the counting semaphore called name. It does no
// I/O. It panics if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Semaphore {
	if rdb == nil {
		panic("semaphore: New with nil redis client")
	}
	if name == "" {
		panic("semaphore: New with empty semaphore name")
	}
	n := internal.NewNames(name)
	return &Semaphore{
		rdb:     rdb,
		name:    name,
		names:   n,
		keys:    lua.SemaphoreKeys{Permits: n.Lock(), Channel: n.Channel()},
		sharded: internal.Sharded(rdb),
		cfg:     newConfig(opts),
	}
}

// Name returns the name of the semaphore.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the number of available permits to n if the semaphore
// has no permit count yet, and reports whether it did. Waiters are woken
// when n > 0.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if n < 0 {
		return false, s.wrap("try set permits", negative("permits", n))
	}
	ok, err := lua.SemaphoreSetPermits(ctx, s.rdb, s.keys, n, true, s.sharded).Result()
	return ok, s.wrap("try set permits", err)
}

// SetPermits sets the number of available permits to n, whatever it was.
// Waiters are woken when the count grows.
func (s *Semaphore) SetPermits(ctx context.Context, n int64) error {
	if n < 0 {
		return s.wrap("set permits", negative("permits", n))
	}
	_, err := lua.SemaphoreSetPermits(ctx, s.rdb, s.keys, n, false, s.sharded).Result()
	return s.wrap("set permits", err)
}

// AddPermits adds n available permits; a negative n takes permits away and
// may leave the count below zero, so that releases must first make up the
// deficit. Adding 0 does nothing. Waiters are woken when permits become
// available.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	if n == 0 {
		return nil
	}
	_, err := lua.SemaphoreRelease(ctx, s.rdb, s.keys, n, s.sharded).Result()
	return s.wrap("add permits", err)
}

// Release adds n permits, whether or not they were acquired through this
// handle, and wakes as many waiters per process as permits are available.
// On a semaphore whose count was never set, it creates the permits.
// Releasing 0 does nothing; a negative n is an error and changes nothing.
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if n < 0 {
		return s.wrap("release", negative("permits", n))
	}
	if n == 0 {
		return nil
	}
	_, err := lua.SemaphoreRelease(ctx, s.rdb, s.keys, n, s.sharded).Result()
	return s.wrap("release", err)
}

// Available returns the number of available permits: 0 for a semaphore
// whose count was never set, negative after AddPermits took away more than
// there were.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	raw, err := s.rdb.Get(ctx, s.keys.Permits).Result()
	if internal.IsNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap("available", err)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, s.wrap("available", fmt.Errorf("%w: the key holds %q, not a permit count", ErrWrongType, raw))
	}
	return n, nil
}

// Drain takes every available permit and returns how many it took. When
// none is available (the count is missing, zero or negative) it returns 0
// and changes nothing.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	n, err := lua.SemaphoreDrain(ctx, s.rdb, s.keys).Result()
	return n, s.wrap("drain", err)
}

// Acquire takes n permits, waiting until n are available at once or ctx is
// done. Acquiring 0 permits succeeds at once; a negative n is an error. On
// failure Acquire returns an error wrapping ctx.Err() or the Redis error
// and leaves the semaphore unchanged: if ctx ended while a take was in
// flight, whatever it took is given back.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if n < 0 {
		return s.wrap("acquire", negative("permits", n))
	}
	if n == 0 {
		return nil
	}
	receipt := s.receipt()
	c := internal.Acquire(s.rdb)
	defer c.Release()
	err := internal.Wait(ctx, c.Hub, s.keys.Channel, s.cfg.pollInterval,
		func(ctx context.Context) (bool, time.Duration, error) {
			ok, err := s.attempt(ctx, receipt, n)
			return ok, 0, err // no lease bounds the wait: the poll interval does
		})
	return s.wrap("acquire", err)
}

// TryAcquire makes one attempt to take n permits and reports whether it
// did: false and no error when fewer than n are available. Acquiring 0
// permits succeeds; a negative n is an error.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (bool, error) {
	if n < 0 {
		return false, s.wrap("acquire", negative("permits", n))
	}
	if n == 0 {
		return true, nil
	}
	ok, err := s.attempt(ctx, s.receipt(), n)
	return ok, s.wrap("acquire", err)
}

// attempt runs the acquire script once for the request whose receipt key
// is receipt.
func (s *Semaphore) attempt(ctx context.Context, receipt string, n int64) (bool, error) {
	res, err := lua.SemaphoreAcquire(ctx, s.rdb, s.keys, receipt, n, receiptTTL).Result()
	if err != nil {
		if !replied(err) {
			// The script may have run without its reply reaching us:
			// cancel the request, giving back what it took.
			s.undo(ctx, receipt)
		}
		return false, err
	}
	return res.OK, nil
}

// undo cancels the request of receipt. The receipt makes it exact: permits
// are given back only if the request took them, and a request still on its
// way takes nothing.
func (s *Semaphore) undo(ctx context.Context, receipt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = lua.SemaphoreUndo(ctx, s.rdb, s.keys, receipt, receiptTTL, s.sharded).Result()
}

// receipt returns the receipt key of a new acquire request.
func (s *Semaphore) receipt() string {
	return s.names.Sub("acquire:" + internal.NewOwnerID())
}

func (s *Semaphore) wrap(op string, err error) error {
	return internal.Wrap("semaphore", op, s.name, err)
}

// replied reports whether err is a reply from Redis, as opposed to a
// failure that leaves unknown whether the command ran.
func replied(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// negative reports a negative permit count or lease v.
func negative(what string, v any) error {
	return fmt.Errorf("%w: %s %v", ErrNegative, what, v)
}
