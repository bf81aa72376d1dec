package hold

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// Kind describes a lock primitive to the engine: its keys, scripts, waiters
// and keeping. A primitive package builds one and hands it to NewLock.
type Kind struct {
	Base
	Keeping Keeping

	// Acquire, Release and Renew run the scripts once (see Config).
	Acquire func(ctx context.Context, m Mode, a Asking) (Grant, error)
	Release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error)
	Renew   func(ctx context.Context, s redis.Scripter, id string) func() (bool, error)
	// ForceUnlock runs the force-unlock script once under receipt (a repeated
	// run reports what the first did), aimed at aim (script.Aim).
	ForceUnlock func(ctx context.Context, receipt string, aim []any) (int64, error)

	Channel  func(m Mode) string // where a waiter for mode m sleeps
	MaxSleep time.Duration       // bounds every sleep; 0: the lease
	Modes    int                 // 1 for a mutex, 2 for a read-write lock
	Verbs    [2]string           // an Exclusive take and release in errors; unset: lock, unlock
	// Leave, if set, undoes what a failed blocking wait for mode m left in Redis
	// (a place, an announcement) and reports whether the wait's retired id a.ID
	// holds a level of m: a grant, then given back. It must be idempotent (it is
	// resent), and runs only when no other wait of m is under way (waits).
	Leave func(ctx context.Context, m Mode, a Asking) (granted bool, err error)
	// Place, if set, is the waiter's place for mode m, kept by the client's
	// keeper while the waiter is parked (perclient.Client.Keep).
	Place func(m Mode) *perclient.Place
	// Grants: releases grant the lock to the first waiter in line (package
	// doc), Channel is the waiter's own, and Place its place in line.
	Grants  bool
	Fencing bool // a grant's fencing token is the hold's
	// GrantLease, if set, caps a grant to the handle's waiters (fairlock: the
	// waiter timeout); their places name it.
	GrantLease time.Duration
	// ClaimByAttempt completes a grant by an acquire attempt, not Tracker.claim
	// (rlock's WithReplicaAck: the attempt waits for the replicas).
	ClaimByAttempt bool
	// LocalHandoff lets an Unlock hand the hold to a goroutine of the handle
	// (handOver): only for a lock not fair between processes whose holds need
	// nothing of their own from Redis (a fencing token, a fixed lease).
	LocalHandoff bool
}

// Asking is what kind of attempt an Acquire is.
type Asking struct {
	Blocking bool // Lock's attempts: a fair lock's waiter joins the line, a writer announces itself
	Refused  bool // the wait's previous attempt was refused: its checks may be skipped
	// ID is the hold id (Tracker.waitID): never reused, so a hold of ID in Redis
	// is this wait's own, a resend or an unclaimed grant.
	ID string
	// Seq numbers the handle's attempts, increasing; a grant to a place and a
	// read level's tag name it.
	Seq uint64
	// Deadline is the latest server time (ms) a copy of the script may run at
	// (exactly.RequestWindow); later, it fails with exactly.Late's error.
	Deadline int64
	Placed   bool // an earlier attempt may have left a place in line, to give up
	Watched  bool // a refused attempt asks the holder to announce its release
}

// Lock is the engine behind a lock handle: every method a lock package
// exports, given its Kind. It is safe for concurrent use.
type Lock struct {
	k       Kind
	t       *Tracker
	clock   exactly.ServerClock // for the deadlines of scripts
	probes  [2]wait.Probe
	ops     [2][2]string // each mode's take and release, in errors
	queued  int          // calls waiting at the gate for an exclusive hold (handOver); under Tracker.mu
	waits   waits
	watched atomic.Int32 // open Watches (Asking.Watched)
}

// waits counts the handle's waits in Redis by mode. What a wait leaves in
// Redis (an rwlock reader's announcement) is shared by its mode's waits:
// only the last to fail takes it away (Kind.Leave), and none starts meanwhile.
type waits struct {
	mu [2]chan struct{} // per mode, a lock: held by Leave, and to start a wait
	n  [2]atomic.Int64
}

// start counts a wait in, unless ctx ends first while a Leave runs.
func (w *waits) start(ctx context.Context, m Mode) error {
	select {
	case w.mu[m] <- struct{}{}: // the common case, whatever ctx says
	default:
		select {
		case w.mu[m] <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.n[m].Add(1)
	<-w.mu[m]
	return nil
}

// end counts a wait out, and runs leave if it failed and was the last; no
// wait of m starts until leave calls done.
func (w *waits) end(m Mode, failed bool, leave func(done func())) {
	if w.n[m].Add(-1) > 0 || !failed {
		return
	}
	w.mu[m] <- struct{}{}
	done := func() { <-w.mu[m] }
	if w.n[m].Load() != 0 {
		done()
		return
	}
	leave(done)
}

// NewLock returns the engine of a handle described by k. It does no I/O.
func NewLock(k Kind) *Lock {
	if k.Grants && k.Place == nil {
		panic(k.Pkg + ": a Kind whose releases grant needs its waiters' Place")
	}
	// Modes report as "rlock", or "rwlock.write" and "rwlock.read".
	l := &Lock{k: k, ops: ops}
	if k.Modes < 2 {
		p := wait.NewProbe(k.RDB, k.Pkg, k.Name)
		l.probes = [2]wait.Probe{p, p}
	} else {
		l.probes = [2]wait.Probe{wait.NewProbe(k.RDB, k.Pkg+".write", k.Name), wait.NewProbe(k.RDB, k.Pkg+".read", k.Name)}
	}
	if k.Keeping.NoPubSub {
		hub.Poll(k.RDB) // a setting of the client, whose waiters share one hub
	}
	if k.Verbs[0] != "" {
		l.ops[Exclusive] = k.Verbs
	}
	cfg := k.Keeping.Config(k.RDB, k.Release, k.Renew, func(err error) error { return l.Wrap("hold", err) })
	cfg.Probes, cfg.Owner = l.probes, k.Owner
	if k.Grants {
		cfg.Granted, cfg.GrantLease = l.deliver, k.GrantLease
	}
	l.t = New(cfg)
	l.t.units = 1
	if k.Modes > 1 {
		l.t.units = allUnits
	}
	l.t.gate = semaphore.NewWeighted(l.t.units)
	l.waits.mu = [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
	return l
}

// Tracker returns the handle's hold tracker.
func (l *Lock) Tracker() *Tracker { return l.t }

// Name returns the name of the lock.
func (l *Lock) Name() string { return l.k.Name }

var ops = [2][2]string{Exclusive: {"lock", "unlock"}, Shared: {"rlock", "runlock"}}

// wait takes a level of mode m in Redis, waiting until it can or ctx is
// done, and records it through in. The caller has passed the local line.
func (l *Lock) wait(ctx context.Context, m Mode, in *intent) error {
	c := perclient.Attach(l.k.RDB)
	defer c.Detach()
	if err := l.waits.start(ctx, m); err != nil {
		return err
	}
	a := Asking{Blocking: true}
	// id and seq name the last attempt refused without error, as its place
	// does: only a grant naming both is claimed, not a late one to an earlier.
	var id string
	var seq uint64
	// lostPlace: an attempt of unknown outcome may have left a place under an
	// id given up, granted before the wait subscribed: recheck looks.
	lostPlace := false
	attempt := func(ctx context.Context) (bool, time.Duration, error) {
		id = ""
		return l.t.attempt(ctx, m, func(ctx context.Context, wid string, n uint64) (Grant, error) {
			a.ID, a.Seq = wid, n
			g, err := l.acquire(ctx, m, a)
			a.Refused = err == nil && !g.OK && g.Refused == nil
			a.Placed = a.Placed || err != nil || !g.OK
			if a.Refused && l.k.Grants {
				id, seq = wid, a.Seq
			}
			return g, err
		}, in)
	}
	try := func(ctx context.Context) (bool, time.Duration, error) {
		ok, wait, err := attempt(ctx)
		switch {
		case !l.k.Grants:
		case errs.OutcomeUnknown(err):
			lostPlace = true
		case lostPlace && err == nil && !ok:
			lostPlace = false
			if again, _ := l.recheck(ctx, m, a.ID); again {
				// A grant given back passed the lock on, maybe to us.
				return attempt(ctx)
			}
		}
		return ok, wait, err
	}
	w := wait.Waiter{Client: c, Channel: l.k.Channel(m), MaxSleep: cmp.Or(l.k.MaxSleep, l.k.Keeping.Lease())}
	if l.k.Place != nil {
		w.Place = l.k.Place(m)
	}
	if l.k.Grants {
		w.Claim = func(ctx context.Context, g script.Grant, base time.Time) (bool, error) {
			if id == "" || g.ID != id || g.Seq != seq {
				// Not ours. One to an id given up is given back; one to
				// the wait's own id is left to an attempt to find.
				if g.ID != "" && l.givenUp(g.ID) {
					l.t.Undo(ctx, m, g.ID)
				}
				return false, nil
			}
			if l.k.ClaimByAttempt && ctx.Err() == nil {
				return false, nil
			}
			if !l.k.Fencing {
				g.Token = 0
			}
			return l.t.claim(ctx, m, g.Token, base, id, in)
		}
		w.Recheck = func(ctx context.Context) (bool, error) { return l.recheck(ctx, m, a.ID) }
		w.Place.Value = func() string { return placeValue(id, seq, l.k.Fencing, l.k.GrantLease) }
	}
	err := w.Wait(ctx, try)
	// Retired while the wait holds the local line: a TryLock after it must
	// not attempt under an id the leave then touches.
	last := a.ID
	if err != nil && last != "" {
		l.t.retire(last)
	}
	l.waits.end(m, err != nil && l.k.Leave != nil && last != "", func(done func()) { l.leave(ctx, m, last, done) })
	return err
}

// placeValue is what an acquire script refusing attempt seq under id left
// in the waiter's place: ["f"]id#seq[/grant lease ms] (lua/rlock_acquire.lua).
func placeValue(id string, seq uint64, fencing bool, lease time.Duration) string {
	v := id + "#" + strconv.FormatUint(seq, 10)
	if fencing {
		v = "f" + v
	}
	if lease > 0 {
		v += "/" + strconv.FormatInt(lease.Milliseconds(), 10)
	}
	return v
}

// recheck reports whether a waiter just subscribed after a refused attempt
// must attempt again: id holds the lock, or it is free (its wake-up may
// predate the subscription). A holder under an id the handle gave up (a
// grant to an attempt whose reply was lost) is given back first.
func (l *Lock) recheck(ctx context.Context, m Mode, id string) (bool, error) {
	f, err := l.k.RDB.HKeys(ctx, l.k.Keys.Lock()).Result()
	if err != nil {
		return false, err
	}
	for _, held := range f {
		if l.givenUp(held) {
			l.t.Undo(ctx, m, held)
			return true, nil
		}
	}
	return len(f) == 0 || slices.Contains(f, id), nil
}

func (l *Lock) givenUp(id string) bool {
	return script.OwnerOf(id) == l.k.Owner && !l.t.inUse(id)
}

// deliver hands a release's grant to grantee's wait on this client.
func (l *Lock) deliver(grantee string, g script.Grant, sent time.Time) {
	c := perclient.Attach(l.k.RDB)
	c.Hub.Deliver(l.k.Keys.WaiterChannel(script.OwnerOf(grantee)), g.Payload(), sent)
	c.Detach()
}

// leave runs Kind.Leave for a failed wait under id, twice at most within
// CleanupTimeout, gives back a grant it reports, and calls done. Should both
// fail, what the wait left expires on the server.
func (l *Lock) leave(ctx context.Context, m Mode, id string, done func()) {
	perclient.TidyUp(ctx, l.k.RDB, CleanupTimeout, func(ctx context.Context) {
		defer done()
		for range 2 {
			var granted bool
			err := exactly.InTime(&l.clock, func(deadline int64) (err error) {
				granted, err = l.k.Leave(ctx, m, Asking{ID: id, Deadline: deadline})
				return err
			})
			if granted {
				l.t.Undo(ctx, m, id)
			}
			if err == nil || errs.IsWrongType(err) || ctx.Err() != nil {
				return
			}
		}
	})
}

// try makes one attempt to take a level of mode m in Redis.
func (l *Lock) try(ctx context.Context, m Mode, in *intent) (bool, error) {
	ok, _, err := l.t.attempt(ctx, m, func(ctx context.Context, id string, seq uint64) (Grant, error) {
		return l.acquire(ctx, m, Asking{ID: id, Seq: seq})
	}, in)
	wait.ReportOf(ctx).Attempt(ctx, ok, err)
	return ok, err
}

// acquire runs the acquire script with a deadline (exactly.InTime): a copy
// run after the attempt was given up takes nothing.
func (l *Lock) acquire(ctx context.Context, m Mode, a Asking) (Grant, error) {
	var g Grant
	a.Watched = l.watched.Load() > 0
	err := exactly.InTime(&l.clock, func(deadline int64) (err error) {
		a.Deadline = deadline
		g, err = l.k.Acquire(ctx, m, a)
		return err
	})
	return g, err
}

// enter waits for n units of the local line, reported as parked.
func (l *Lock) enter(ctx context.Context, m Mode, n int64) error {
	if m == Exclusive {
		l.t.mu.Lock()
		l.queued++
		l.t.mu.Unlock()
	}
	err := l.pass(ctx, n)
	if m == Exclusive {
		l.t.mu.Lock()
		l.queued--
		l.t.mu.Unlock()
		if err != nil {
			l.settleHanded(ctx)
		}
	}
	return err
}

func (l *Lock) pass(ctx context.Context, n int64) error {
	if r := wait.ReportOf(ctx); r != nil && ctx.Err() == nil {
		if l.t.gate.TryAcquire(n) {
			return nil
		}
		r.Park()
	}
	return l.t.gate.Acquire(ctx, n)
}

// ReleaseTimeout bounds a release, which ignores the caller's cancellation:
// a deferred Unlock after a cancelled request still frees the lock.
const ReleaseTimeout = 5 * time.Second

// ReleaseContext returns ctx uncancelled, bounded by ReleaseTimeout.
func ReleaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
}

// release releases the level r (nil: a plain read) holds in h.
func (l *Lock) release(ctx context.Context, h *hold, r *record, m Mode) error {
	ctx, cancel := ReleaseContext(ctx)
	defer cancel()
	return l.t.releaseHold(ctx, h, r, m)
}

const forceTries = 8

// ForceUnlock deletes the lock whoever holds it and reports whether there
// was one; a resend reports what the first run did. The script deletes
// only the holds read before (script.Aim), so a late copy spares later ones.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	before := l.t.current()
	for range forceTries {
		outcome, aim, err := l.forceOnce(ctx)
		if err != nil {
			return false, l.Wrap("force unlock", err)
		}
		if outcome != script.ForceMoved {
			// Waits for nothing: a Lost hook may call it mid-script.
			l.t.forced(before, func(id string) bool { return aimsAt(aim, id) })
			return outcome == script.ForceDeleted, nil
		}
	}
	return false, l.Wrap("force unlock", errors.New("the lock's holds kept changing; try again"))
}

// aimsAt reports whether aim names id, bare or mode-prefixed ("w:", "r:").
func aimsAt(aim []any, id string) bool {
	return slices.ContainsFunc(aim, func(f any) bool {
		s, _ := f.(string)
		return s == id || strings.HasSuffix(s, ":"+id)
	})
}

// forceOnce reads the holds and runs the force-unlock script aimed at them.
func (l *Lock) forceOnce(ctx context.Context) (int64, []any, error) {
	fields, err := l.k.RDB.HGetAll(ctx, l.k.Keys.Lock()).Result()
	if err != nil && !errs.IsWrongType(err) {
		return 0, nil, err // a key of another type is the script's to report
	}
	aim := script.Aim(fields)
	receipt := l.k.Keys.Receipt(keyspace.ReceiptForce, keyspace.NewRequestID())
	var outcome int64
	// No deadline: the aim keeps a late copy from deleting a later hold.
	err = exactly.Once(ctx, nil, func() string { return receipt }, func(receipt string, _ int64) (err error) {
		outcome, err = l.k.ForceUnlock(ctx, receipt, aim)
		return err
	})
	// The receipt has served; should deleting it fail, it expires.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	l.k.RDB.Del(dctx, receipt)
	cancel()
	return outcome, aim, err
}

// IsLocked reports whether anyone holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	n, err := l.k.RDB.Exists(ctx, l.k.Keys.Lock()).Result()
	return n == 1, l.Wrap("is locked", err)
}

// IsHeld reports whether Redis has the handle's current hold, for a lock
// hash whose fields are hold ids.
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	id := l.HoldID()
	if id == "" {
		return false, nil
	}
	ok, err := l.k.RDB.HExists(ctx, l.k.Keys.Lock(), id).Result()
	return ok, l.Wrap("is held", err)
}

// TTL returns the lock's remaining lease, whoever holds it: 0 when free.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	d, err := l.k.RDB.PTTL(ctx, l.k.Keys.Lock()).Result()
	if err != nil {
		return 0, l.Wrap("ttl", err)
	}
	return max(d, 0), nil
}

// Done returns a channel closed when the handle's current hold ends.
func (l *Lock) Done() <-chan struct{} { return l.t.Done() }

// Token returns the fencing token of the current hold (Tracker.Hold).
func (l *Lock) Token() uint64 {
	_, token := l.t.Hold()
	return token
}

// Wrap wraps err with the package, operation and name of the lock.
func (l *Lock) Wrap(op string, err error) error {
	return errs.Wrap(l.k.Pkg, op, l.k.Name, err)
}

// Base is what every handle of a primitive has.
type Base struct {
	Pkg     string // for errors: "rlock"
	RDB     redis.UniversalClient
	Name    string
	Keys    keyspace.Names
	Owner   string // random
	Sharded bool   // notify with SPUBLISH (Redis Cluster) rather than PUBLISH
}

// NewBase returns the Base of a new handle of package pkg on the primitive
// called name. It panics when rdb is nil or name is empty.
func NewBase(pkg string, rdb redis.UniversalClient, name string) Base {
	if rdb == nil {
		panic(pkg + ": New with nil redis client")
	}
	if name == "" {
		panic(pkg + ": New with empty name")
	}
	return Base{Pkg: pkg, RDB: rdb, Name: name, Keys: keyspace.NewNames(name), Owner: keyspace.NewOwnerID(), Sharded: perclient.Sharded(rdb)}
}

// HoldID returns the hold id of the handle's current hold, or "".
func (l *Lock) HoldID() string {
	if h := l.t.current(); h != nil {
		return h.id
	}
	return ""
}
