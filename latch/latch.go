package latch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"

	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// ErrWrongType is matched by errors for a latch key that Redis already
// uses for something other than a latch's count: a key of another type,
// or a string that is not a positive integer. Nothing is changed. It is
// the same value in every redisync package.
var ErrWrongType = errs.ErrWrongType

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// ErrNonPositiveCount is matched by the error of TrySetCount for a count that is
// not above zero. Nothing is changed in Redis.
var ErrNonPositiveCount = errors.New("count must be above zero")

// ErrBadCount is ErrNonPositiveCount.
//
// Deprecated: use ErrNonPositiveCount; this name goes in the next release.
var ErrBadCount = ErrNonPositiveCount

// ErrOutOfRange is matched by the error of TrySetCount for a count above
// 2^53 - 1 (9007199254740991), the most a Redis script holds exactly.
// Nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOutOfRange = errs.ErrOutOfRange

// receiptTTL is how long a latch remembers that a request changed it, so
// that a resent request changes nothing: it lives that long past the
// request's deadline, after which no copy of it changes anything.
const receiptTTL = exactly.ReceiptTTL

// Latch is a distributed count-down latch: Wait returns once CountDown has
// been called as many times as the count TrySetCount gave it, by any
// handle in any process. A Latch is safe for concurrent use.
type Latch struct {
	rdb     redis.UniversalClient
	name    string
	names   keyspace.Names
	keys    script.LatchKeys
	sharded bool
	cfg     config
	clock   exactly.ServerClock // the server's clock, for the deadlines of requests
	probe   wait.Probe          // what Wait reports to the client's Observer
}

// New returns a handle on the count-down latch called name. It does no
// I/O. It panics if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Latch {
	if rdb == nil {
		panic("latch: New with nil redis client")
	}
	if name == "" {
		panic("latch: New with empty latch name")
	}
	n := keyspace.NewNames(name)
	cfg := newConfig(opts)
	if cfg.noPubSub {
		hub.Poll(rdb) // a setting of the client, whose waiters share one hub
	}
	return &Latch{
		rdb:     rdb,
		name:    name,
		names:   n,
		keys:    script.LatchKeys{Count: n.Latch(), Channel: n.LatchChannel()},
		sharded: perclient.Sharded(rdb),
		cfg:     cfg,
		probe:   wait.NewProbe(rdb, "latch", name),
	}
}

// Name returns the name of the latch.
func (l *Latch) Name() string { return l.name }

// TrySetCount gives the latch the count n if it is at zero, and reports
// whether it did: false, changing nothing, when the latch already has a
// count. n must be above zero; otherwise TrySetCount returns an error
// wrapping ErrNonPositiveCount and changes nothing. n must also be at most
// 2^53 - 1, or the error wraps ErrOutOfRange. Setting a count wakes
// nobody.
//
// A call whose reply is lost is retried, and a retry of a request that
// went through reports true without setting anything again.
func (l *Latch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if n <= 0 {
		return false, l.wrap("try set count", fmt.Errorf("%w: %d", ErrNonPositiveCount, n))
	}
	if err := errs.CheckCount("count", n); err != nil {
		return false, l.wrap("try set count", err)
	}
	var ok bool
	err := l.once(ctx, keyspace.ReceiptSetCount, func(r script.Request) (err error) {
		ok, err = script.LatchTrySetCount(ctx, l.rdb, l.keys, r, n).Result()
		return err
	})
	return ok, l.wrap("try set count", err)
}

// CountDown takes one from the count. The step to zero deletes the latch
// and wakes every waiter, in every process; a CountDown that leaves the
// count above zero wakes nobody, and one on a latch at zero does nothing
// and returns nil: set the count before the jobs start (see Ordering in
// the package doc).
//
// Each call counts down at most once: when its reply is lost, CountDown
// retries, and a retry finds that the first went through and takes
// nothing more. An error from a network fault leaves unknown whether it
// counted down.
func (l *Latch) CountDown(ctx context.Context) error {
	err := l.once(ctx, keyspace.ReceiptCountDown, func(r script.Request) error {
		_, err := script.LatchCountDown(ctx, l.rdb, l.keys, r, l.sharded).Result()
		return err
	})
	return l.wrap("count down", err)
}

// Count returns the current count: 0 when the latch is at zero, which is
// when it does not exist in Redis.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	n, err := l.count(ctx)
	return n, l.wrap("count", err)
}

// Wait waits until the count is zero, and returns nil then, at once when
// it is zero already (a latch never set, counted down or deleted: set the
// count before anyone waits), or an
// error wrapping ctx.Err() when ctx ends first. While Redis is out of
// reach, Wait goes on trying until ctx ends; the error then also wraps the
// last Redis error. A Wait that fails leaves nothing behind.
//
// Waiters are woken by the one message the step to zero (or Delete)
// publishes, and poll at WithPollInterval besides, so that a latch zeroed
// without a message (deleted by hand, lost in a Redis restart) releases
// them within that interval.
func (l *Latch) Wait(ctx context.Context) error {
	c := perclient.Attach(l.rdb)
	defer c.Detach()
	// A wait reports as a blocking acquire of the latch (instrumentation):
	// how long it waited, its wake-ups, and whether it ended at zero.
	rctx, r := l.probe.Begin(ctx, true)
	err := wait.Waiter{Client: c, Channel: l.keys.Channel, MaxSleep: l.cfg.pollInterval}.Wait(rctx,
		func(ctx context.Context) (bool, time.Duration, error) {
			n, err := l.count(ctx)
			return err == nil && n == 0, 0, err // no lease bounds the wait: the poll interval does
		})
	r.End(ctx, err == nil, err)
	return l.wrap("wait", err)
}

// Delete deletes the latch, whatever its count, and reports whether there
// was one: false, changing nothing, when it was at zero. Every waiter sees
// zero and returns. A call whose reply is lost is retried, and reports
// what its first run did.
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	var deleted bool
	err := l.once(ctx, keyspace.ReceiptDelete, func(r script.Request) (err error) {
		deleted, err = script.LatchDelete(ctx, l.rdb, l.keys, r, l.sharded).Result()
		return err
	})
	return deleted, l.wrap("delete", err)
}

// count reads the count: 0 when the key is missing.
func (l *Latch) count(ctx context.Context) (int64, error) {
	raw, err := l.rdb.Get(ctx, l.keys.Count).Result()
	if errs.IsNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		// The scripts never leave anything else there: the key is not ours.
		return 0, fmt.Errorf("%w: key %q holds %q, not a positive count", ErrWrongType, l.keys.Count, raw)
	}
	return n, nil
}

// once runs request under a new receipt of the given kind (see
// exactly.Once).
func (l *Latch) once(ctx context.Context, kind string, request func(r script.Request) error) error {
	return exactly.Once(ctx, &l.clock, func() string { return l.names.Receipt(kind, keyspace.NewRequestID()) },
		func(receipt string, deadline int64) error {
			return request(script.Request{Receipt: receipt, TTL: receiptTTL, Deadline: deadline})
		})
}

func (l *Latch) wrap(op string, err error) error {
	return errs.Wrap("latch", op, l.name, errs.WrongTypeAt(l.keys.Count, err))
}
