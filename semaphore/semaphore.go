package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// ErrNotHeld is returned by Leased.Release for a permit id that holds no
// permit. It is the same value in every redisync package.
var ErrNotHeld = errs.ErrNotHeld

// ErrLost is the reason a permit kept alive by the watchdog was lost,
// passed to the [WithOnLost] hook.
var ErrLost = errs.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type or content.
var ErrWrongType = errs.ErrWrongType

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// ErrNegativeArgument is matched by errors for a negative permit count or lease.
// Nothing is changed in Redis.
var ErrNegativeArgument = errors.New("negative argument")

// ErrNegative is ErrNegativeArgument.
//
// Deprecated: use ErrNegativeArgument; this name goes in the next release.
var ErrNegative = ErrNegativeArgument

// ErrOutOfRange is matched by errors for a permit count or amount beyond
// 2^53 - 1 (9007199254740991) in magnitude, the most a Redis script holds
// exactly, and for an AddPermits or Release that would take the count
// past it. Nothing is changed in Redis. It is the same value in every
// redisync package.
var ErrOutOfRange = errs.ErrOutOfRange

// Semaphore is a distributed counting semaphore. Its permits are not owned:
// any handle, in any process, may release permits it never acquired, and
// waiters are not served in arrival order. A Semaphore is safe for
// concurrent use.
type Semaphore struct {
	rdb     redis.UniversalClient
	name    string
	names   keyspace.Names
	keys    script.SemaphoreKeys
	sharded bool
	cfg     config
	clock   exactly.ServerClock // the server's clock, for the deadlines of requests
	settled settledQueue        // acquire receipts to delete (see settled.go)
	owed    settledQueue        // acquire receipts whose undo failed, to send again (see repay)
	probe   wait.Probe          // what its acquires report as (package observe)
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
	n := keyspace.NewNames(name)
	cfg := newConfig(opts)
	if cfg.noPubSub {
		hub.Poll(rdb) // a setting of the client, whose waiters share one hub
	}
	return &Semaphore{
		rdb:     rdb,
		name:    name,
		names:   n,
		keys:    script.SemaphoreKeys{Permits: n.Lock(), Channel: n.Channel(), Others: n.Others(keyspace.KindSemaphore)},
		sharded: perclient.Sharded(rdb),
		cfg:     cfg,
		probe:   wait.NewProbe(rdb, "semaphore", name),
	}
}

// Name returns the name of the semaphore.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the number of available permits to n if the semaphore
// has no permit count yet, and reports whether it did. Waiters are woken
// when n > 0. A negative n, or one above 2^53 - 1 ([ErrOutOfRange]), is
// an error and changes nothing.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if err := checkPermits(n); err != nil {
		return false, s.wrap("try set permits", err)
	}
	var ok bool
	err := s.once(ctx, keyspace.ReceiptSet, func(r script.Request) (err error) {
		return s.withSettled(func(settled []string) (err error) {
			ok, err = script.SemaphoreSetPermits(ctx, s.rdb, s.keys, r, n, true, s.sharded, settled).Result()
			return err
		})
	})
	return ok, s.wrap("try set permits", err)
}

// SetPermits sets the number of available permits to n, whatever it was.
// Waiters are woken when the count grows. A negative n, or one above
// 2^53 - 1 ([ErrOutOfRange]), is an error and changes nothing.
func (s *Semaphore) SetPermits(ctx context.Context, n int64) error {
	if err := checkPermits(n); err != nil {
		return s.wrap("set permits", err)
	}
	err := s.once(ctx, keyspace.ReceiptSet, func(r script.Request) error {
		return s.withSettled(func(settled []string) error {
			_, err := script.SemaphoreSetPermits(ctx, s.rdb, s.keys, r, n, false, s.sharded, settled).Result()
			return err
		})
	})
	return s.wrap("set permits", err)
}

// AddPermits adds n available permits; a negative n takes permits away and
// may leave the count below zero, so that releases must first make up the
// deficit. Adding 0 does nothing. Waiters are woken when permits become
// available. An n, or a count afterwards, beyond 2^53 - 1 in magnitude is
// an error wrapping [ErrOutOfRange], and changes nothing.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	if n == 0 {
		return nil
	}
	if err := errs.CheckCount("permits", n); err != nil {
		return s.wrap("add permits", err)
	}
	return s.wrap("add permits", s.add(ctx, n))
}

// Release adds n permits, whether or not they were acquired through this
// handle, and wakes as many waiters per process as permits are available.
// On a semaphore whose count was never set, it creates the permits.
// Releasing 0 does nothing; a negative n is an error and changes nothing,
// and so is one that would take the count above 2^53 - 1
// ([ErrOutOfRange]).
//
// Each call adds its permits at most once: when its reply is lost, Release
// retries, and a retry finds that the first went through and adds nothing.
// Two calls are two releases: permits are not owned, so nothing can tell a
// second Release from a release of permits acquired elsewhere. An error
// from a network fault leaves unknown whether the permits were added.
//
// Release runs even when ctx is done or its deadline has passed: it uses
// ctx's values without its cancellation, bounded by a timeout of its own
// (5s), so a deferred Release after a cancelled request still gives the
// permits back at once.
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := checkPermits(n); err != nil {
		return s.wrap("release", err)
	}
	if n == 0 {
		return nil
	}
	// A release is not abandoned because the caller's ctx ended: a
	// deferred Release after a cancelled request must not lose permits.
	ctx, cancel := hold.ReleaseContext(ctx)
	defer cancel()
	return s.wrap("release", s.add(ctx, n))
}

// add adds delta permits once.
func (s *Semaphore) add(ctx context.Context, delta int64) error {
	s.repay(ctx)
	return s.once(ctx, keyspace.ReceiptRelease, func(r script.Request) error {
		return s.withSettled(func(settled []string) error {
			_, err := script.SemaphoreRelease(ctx, s.rdb, s.keys, r, delta, s.sharded, settled).Result()
			return err
		})
	})
}

// once runs request under a new receipt of the given kind (see
// exactly.Once).
func (s *Semaphore) once(ctx context.Context, kind string, request func(r script.Request) error) error {
	return exactly.Once(ctx, &s.clock, func() string { return s.names.Receipt(kind, keyspace.NewRequestID()) },
		func(receipt string, deadline int64) error {
			return request(script.Request{Receipt: receipt, TTL: receiptTTL, Deadline: deadline})
		})
}

// Available returns the number of available permits: 0 for a semaphore
// whose count was never set, negative after AddPermits took away more than
// there were.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	raw, err := s.rdb.Get(ctx, s.keys.Permits).Result()
	if errs.IsNil(err) {
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
// and changes nothing. A count above 2^53 - 1, which it could not report
// exactly, is an error wrapping [ErrOutOfRange] and changes nothing.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	var n int64
	err := s.once(ctx, keyspace.ReceiptDrain, func(r script.Request) (err error) {
		return s.withSettled(func(settled []string) (err error) {
			n, err = script.SemaphoreDrain(ctx, s.rdb, s.keys, r, settled).Result()
			return err
		})
	})
	return n, s.wrap("drain", err)
}

func (s *Semaphore) wrap(op string, err error) error {
	return errs.Wrap("semaphore", op, s.name, err)
}

// negative reports a negative permit count or lease v.
func negative(what string, v any) error {
	return fmt.Errorf("%w: %s %v", ErrNegativeArgument, what, v)
}

// checkPermits reports a permit count n that is negative, or beyond what
// a script holds exactly (see ErrOutOfRange).
func checkPermits(n int64) error {
	if n < 0 {
		return negative("permits", n)
	}
	return errs.CheckCount("permits", n)
}
