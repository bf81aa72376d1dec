package semaphore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

// Leased is a distributed semaphore whose acquired permits have ids and
// leases: a permit that is neither released nor renewed returns to the pool
// when its lease runs out, so a crashed process cannot leak permits for
// longer than their lease. A Leased is safe for concurrent use.
type Leased struct {
	rdb     redis.UniversalClient
	name    string
	keys    script.LeasedKeys
	sharded bool
	cfg     config
	clock   exactly.ServerClock // the server's clock, for the deadlines of requests

	mu   sync.Mutex               // protects kept and owed
	kept map[string]*hold.Tracker // permits the watchdog keeps alive, by id: one hold each
	owed map[string]*hold.Tracker // permits the watchdog gave up, by id: the Tracker that owes the release (see kept.go)

	probe wait.Probe // what its acquires and holds report as (package observe)

	// lostAt, if set, runs first in the Lost hook of a permit's Tracker,
	// with no lock held: tests hold there the instant between the end of
	// a permit's hold and the hook (export_test.go).
	lostAt func()
}

// NewLeased returns a handle on the leased semaphore called name. It does
// no I/O. It panics if rdb is nil, name is empty or an option is invalid.
func NewLeased(rdb redis.UniversalClient, name string, opts ...LeasedOption) *Leased {
	if rdb == nil {
		panic("semaphore: NewLeased with nil redis client")
	}
	if name == "" {
		panic("semaphore: NewLeased with empty semaphore name")
	}
	n := keyspace.NewNames(name)
	cfg := newLeasedConfig(opts)
	if cfg.noPubSub {
		hub.Poll(rdb) // a setting of the client, whose waiters share one hub
	}
	return &Leased{
		rdb:     rdb,
		name:    name,
		keys:    script.LeasedKeys{Leases: n.Lock(), Permits: n.Sub("permits"), Channel: n.Channel(), Others: n.Others(keyspace.KindLeased)},
		sharded: perclient.Sharded(rdb),
		cfg:     cfg,
		kept:    make(map[string]*hold.Tracker),
		owed:    make(map[string]*hold.Tracker),
		probe:   wait.NewProbe(rdb, "leased", name),
	}
}

// Name returns the name of the semaphore.
func (l *Leased) Name() string { return l.name }

// TrySetPermits sets the total number of permits to n if no total is set
// yet, and reports whether it did. A call whose reply is lost retries
// under its receipt and reports what its first run did. A negative n, or
// one above 2^53 - 1 ([ErrOutOfRange]), is an error and changes nothing.
func (l *Leased) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if err := checkPermits(n); err != nil {
		return false, l.wrap("try set permits", err)
	}
	var ok bool
	err := l.once(ctx, keyspace.ReceiptSet, func(r script.Request) (err error) {
		ok, err = script.LeasedSetPermits(ctx, l.rdb, l.keys, r, n, true, l.sharded).Result()
		return err
	})
	return ok, l.wrap("try set permits", err)
}

// SetPermits sets the total number of permits to n, acquired ones
// included: when more than n are acquired, Available turns negative until
// enough are released or expire. A call whose reply is lost retries under
// its receipt, which sets nothing the second time. A negative n, or one
// above 2^53 - 1 ([ErrOutOfRange]), is an error and changes nothing.
func (l *Leased) SetPermits(ctx context.Context, n int64) error {
	if err := checkPermits(n); err != nil {
		return l.wrap("set permits", err)
	}
	err := l.once(ctx, keyspace.ReceiptSet, func(r script.Request) error {
		_, err := script.LeasedSetPermits(ctx, l.rdb, l.keys, r, n, false, l.sharded).Result()
		return err
	})
	return l.wrap("set permits", err)
}

// AddPermits adds n to the total number of permits; a negative n takes
// permits away, and the total may go below zero. Adding 0 does nothing.
// An n, or a total afterwards, beyond 2^53 - 1 in magnitude is an error
// wrapping [ErrOutOfRange], and changes nothing.
// Each call adds its permits at most once: a call whose reply is lost
// retries under its receipt, which adds nothing the second time. An error
// from a network fault leaves unknown whether the permits were added.
func (l *Leased) AddPermits(ctx context.Context, n int64) error {
	if n == 0 {
		return nil
	}
	if err := errs.CheckCount("permits", n); err != nil {
		return l.wrap("add permits", err)
	}
	err := l.once(ctx, keyspace.ReceiptAdd, func(r script.Request) error {
		_, err := script.LeasedAddPermits(ctx, l.rdb, l.keys, r, n, l.sharded).Result()
		return err
	})
	return l.wrap("add permits", err)
}

// once runs request under a new receipt of the given kind (see
// exactly.Once).
func (l *Leased) once(ctx context.Context, kind string, request func(r script.Request) error) error {
	names := keyspace.NewNames(l.name)
	return exactly.Once(ctx, &l.clock, func() string { return names.Receipt(kind, keyspace.NewRequestID()) },
		func(receipt string, deadline int64) error {
			return request(script.Request{Receipt: receipt, TTL: receiptTTL, Deadline: deadline})
		})
}

// Available returns the number of permits that can be acquired now: the
// total minus the acquired permits whose lease has not run out. It is
// negative after the total was reduced below the acquired count.
func (l *Leased) Available(ctx context.Context) (int64, error) {
	n, err := script.LeasedAvailable(ctx, l.rdb, l.keys, l.sharded).Result()
	return n, l.wrap("available", err)
}

// Acquire takes a permit and returns its id, waiting until one is available
// or ctx is done. The permit expires lease after it was taken, unless it is
// renewed or released first. With lease 0 it has the lease
// WithWatchdogTimeout and the client's watchdog renews it for as long as
// the process lives, until Release. A negative lease is an error. On
// failure Acquire returns an error wrapping ctx.Err() or the Redis error
// and leaves no permit taken.
func (l *Leased) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	if lease < 0 {
		return "", l.wrap("acquire", negative("lease", lease))
	}
	l.repay(ctx)
	id := keyspace.NewOwnerID()
	c := perclient.Attach(l.rdb)
	defer c.Detach()
	var late atomic.Bool // an attempt under id was given back: the next takes a new id
	t := l.keeper(id, lease, &late)
	var unset bool // the last attempt found no total at all
	actx, report := l.probe.Begin(ctx, true)
	err := wait.Waiter{Client: c, Channel: l.keys.Channel, MaxSleep: l.cfg.pollInterval}.Wait(actx,
		func(ctx context.Context) (bool, time.Duration, error) {
			if late.Swap(false) {
				// An attempt under id was given back: Redis may run that
				// give-back (or a copy of it, or its second sending) after
				// this attempt, when it would release the permit this
				// attempt takes under the same id. The attempts go on
				// under a new id; the earlier one's permit, if it took
				// one, goes when the give-back runs, or at the end of its
				// lease.
				id = keyspace.NewOwnerID()
				t = l.keeper(id, lease, &late)
			}
			return l.attempt(ctx, t, id, lease, &unset, &late)
		})
	report.End(ctx, err == nil, err)
	if err != nil && unset {
		err = fmt.Errorf("%w: %w", err, errUnset)
	}
	if err != nil {
		return "", l.wrap("acquire", err)
	}
	return id, nil
}

// TryAcquire makes one attempt to take a permit with the given lease (see
// Acquire). It returns the permit id and true, or false and no error when
// no permit is available.
func (l *Leased) TryAcquire(ctx context.Context, lease time.Duration) (string, bool, error) {
	if lease < 0 {
		return "", false, l.wrap("acquire", negative("lease", lease))
	}
	l.repay(ctx)
	id := keyspace.NewOwnerID()
	actx, report := l.probe.Begin(ctx, false)
	ok, _, err := l.attempt(actx, l.keeper(id, lease, nil), id, lease, new(bool), nil)
	report.Attempt(ctx, ok, err)
	report.End(ctx, ok, err)
	if !ok || err != nil {
		return "", false, l.wrap("acquire", errs.CtxErr(ctx, err))
	}
	return id, true, nil
}

// attempt runs the acquire script once for the permit id, under the
// engine's rules (see hold.Take): an attempt whose outcome is unknown, or
// whose grant arrives after ctx ended or too late to trust, gives the
// permit back. With lease 0 the permit is a hold of its own, t (see
// keeper), which the watchdog keeps alive. A give-back retires id: it
// sets late, if not nil (see Acquire).
func (l *Leased) attempt(ctx context.Context, t *hold.Tracker, id string, lease time.Duration, unset *bool, late *atomic.Bool) (bool, time.Duration, error) {
	try := func(ctx context.Context) (hold.Grant, error) {
		var res script.LeaseTaken
		err := exactly.InTime(&l.clock, func(deadline int64) (err error) {
			res, err = script.LeasedAcquire(ctx, l.rdb, l.keys, id, l.leaseOf(lease), l.sharded, deadline).Result()
			return err
		})
		*unset = err == nil && res.Unset
		return hold.Grant{OK: res.OK, Levels: hold.Levels{hold.Exclusive: 1}, Wait: res.Wait}, err
	}
	if lease > 0 {
		began := time.Now()
		undo := func(ctx context.Context, g *hold.Grant) {
			if late != nil {
				late.Store(true) // before the give-back, which may finish in the background
			}
			give := func(ctx context.Context) { _, _ = l.giveBack(ctx, id, late) }
			perclient.TidyUp(ctx, l.rdb, hold.CleanupTimeout, give)
			if g == nil {
				// A copy of the attempt may yet run, after that give-back:
				// the permit it takes is given back too (the watchdog's
				// permits have the Tracker's).
				hold.GiveBackAgain(l.rdb, began, func(ctx context.Context) { _, _ = l.releaseScript(ctx, id) })
			}
		}
		g, _, err := hold.Take(ctx, lease, try, undo)
		return g.OK, g.Wait, err
	}
	ok, wait, err := t.Attempt(ctx, hold.Exclusive, func(ctx context.Context, _ string, _ uint64) (hold.Grant, error) { return try(ctx) })
	if ok {
		l.took(id, t)
	}
	return ok, wait, err
}

// keeper returns the tracker of a request for the permit id with the given
// lease: one for every attempt of the request under id, nil for a positive
// lease, which the watchdog does not keep. A give-back retires id: it
// sets late, if not nil (see Acquire).
func (l *Leased) keeper(id string, lease time.Duration, late *atomic.Bool) *hold.Tracker {
	if lease > 0 {
		return nil
	}
	return l.trackerOf(id, late)
}

// tracker returns a tracker for the permit id kept alive by the watchdog.
func (l *Leased) tracker(id string) *hold.Tracker { return l.trackerOf(id, nil) }

// giveBack gives back the permit an attempt under id may have taken, and
// retires id: it sets late, if not nil, so that the request's next attempt
// takes a new id. A copy of the give-back that Redis runs late, or its
// second sending (hold.GiveBackAgain), then never meets a permit taken
// since.
func (l *Leased) giveBack(ctx context.Context, id string, late *atomic.Bool) (bool, error) {
	if late != nil {
		late.Store(true)
	}
	return l.releaseScript(ctx, id)
}

func (l *Leased) trackerOf(id string, late *atomic.Bool) *hold.Tracker {
	// A permit id is the hold id (the Tracker's own, one per permit, is
	// not used): Acquire asks under a new id after a give-back whose
	// outcome is unknown, so that a give-back that Redis runs late finds
	// that attempt's permit or nothing, as a lock's hold id does.
	release := func(ctx context.Context, _ hold.Mode, _ string, _ uint64, giveBack bool) (hold.Released, error) {
		var ok bool
		var err error
		if giveBack {
			ok, err = l.giveBack(ctx, id, late)
		} else {
			ok, err = l.releaseScript(ctx, id)
		}
		return hold.Released{NotHeld: !ok}, err
	}
	renew := func(ctx context.Context, s redis.Scripter, _ string) func() (bool, error) {
		return script.LeasedRenew(ctx, s, l.keys, id, l.cfg.watchdogTimeout, l.sharded).Result
	}
	k := hold.Keeping{WatchdogTimeout: l.cfg.watchdogTimeout, OnLost: l.cfg.onLost}
	cfg := k.Config(l.rdb, release, renew, func(err error) error {
		return l.wrap("permit "+id, err)
	})
	cfg.Probes[hold.Exclusive] = l.probe
	// A lost permit leaves kept, and its owed release goes to the handle
	// (see lost); the WithOnLost hook runs after. The hook runs with
	// neither t's mu nor the watchdog's held (see hold.Tracker.end).
	var t *hold.Tracker
	onLost := cfg.Lost
	cfg.Lost = func(err error) {
		if l.lostAt != nil {
			l.lostAt()
		}
		l.lost(id, t)
		if onLost != nil {
			onLost(err)
		}
	}
	t = hold.New(cfg)
	return t
}

func (l *Leased) releaseScript(ctx context.Context, id string) (bool, error) {
	return script.LeasedRelease(ctx, l.rdb, l.keys, id, l.sharded).Result()
}

// Release gives back the permit id, whichever handle or process acquired
// it, and wakes waiters. For an id that holds no permit (unknown, expired
// or already released) it returns an error wrapping [ErrNotHeld] that
// names the id, and changes nothing.
//
// When the reply of a release is lost, Release retries it, knowing that
// the first may have gone through: a retry that finds no permit reports
// success. If Release fails nonetheless, this handle stops renewing the
// permit all the same (its Done closes), so that it returns to the pool
// when its lease runs out, if not before: the handle sends the release
// again before its next Acquire, TryAcquire, Release or Renew, and a later
// Release still gives it back if it can.
//
// Release runs even when ctx is done or its deadline has passed: it uses
// ctx's values without its cancellation, bounded by a timeout of its own
// (5s), so a deferred Release after a cancelled request still gives the
// permit back at once.
func (l *Leased) Release(ctx context.Context, id string) error {
	ctx, cancel := hold.ReleaseContext(ctx) // not abandoned because ctx ended
	defer cancel()
	t := l.forget(id)
	l.repay(ctx)
	var err error
	if t != nil {
		err = t.Release(ctx, hold.Exclusive)
		l.stillOwed(id, t)
	} else {
		var ok bool
		ok, err = hold.ReleaseUntracked(ctx, func(ctx context.Context) (bool, error) { return l.releaseScript(ctx, id) })
		if err == nil && !ok {
			err = ErrNotHeld
		}
	}
	if errors.Is(err, ErrNotHeld) {
		err = permitNotHeld{id: id}
	} else if err != nil {
		err = fmt.Errorf("permit %q: %w", id, err)
	}
	return l.wrap("release", err)
}

// Renew sets the permit id to expire lease from now and reports whether it
// did: false, changing nothing, when the id holds no permit (unknown,
// expired or released). With lease 0 the permit gets the lease
// WithWatchdogTimeout and this handle's watchdog keeps it alive from then
// on; with a positive lease the caller keeps it alive, and the watchdog
// stops renewing it. A negative lease is an error.
func (l *Leased) Renew(ctx context.Context, id string, lease time.Duration) (bool, error) {
	if lease < 0 {
		return false, l.wrap("renew", negative("lease", lease))
	}
	// Forgiven first: an owed release of id must not run after the renewal
	// (see kept.go).
	if err := l.forgive(ctx, id); err != nil {
		return false, l.wrap("renew", err)
	}
	l.repay(ctx)
	sent := time.Now()
	ok, err := script.LeasedRenew(ctx, l.rdb, l.keys, id, l.leaseOf(lease), l.sharded).Result()
	if err != nil {
		return false, l.wrap("renew", err)
	}
	if ok && lease == 0 {
		l.keep(id, sent)
	} else if t := l.forget(id); t != nil {
		t.Drop()
	}
	return ok, nil
}

// leaseOf returns the lease a permit acquired or renewed with lease gets.
func (l *Leased) leaseOf(lease time.Duration) time.Duration {
	if lease == 0 {
		return l.cfg.watchdogTimeout
	}
	return lease
}

func (l *Leased) wrap(op string, err error) error {
	return errs.Wrap("semaphore", op, l.name, err)
}

// permitNotHeld is ErrNotHeld as Release reports it for a permit: it
// names the permit, not a lock, and matches ErrNotHeld.
type permitNotHeld struct{ id string }

func (e permitNotHeld) Error() string {
	return fmt.Sprintf("permit %q not held (unknown, expired or released)", e.id)
}

func (e permitNotHeld) Unwrap() error { return ErrNotHeld }
