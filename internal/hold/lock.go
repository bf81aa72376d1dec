package hold

import (
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
	"github.com/redisync/redisync/internal/hub"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"

	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/wait"
)

// Kind describes a lock primitive to the engine: its keys and scripts, how
// its waiters wait, and how it is kept. A primitive package builds one in
// New and hands it to NewLock; its exported methods call the Lock's.
type Kind struct {
	Base
	Keeping Keeping

	// Acquire runs the acquire script once for mode m under hold id a.ID;
	// a says what kind of attempt it is.
	Acquire func(ctx context.Context, m Mode, a Asking) (Grant, error)
	// Release runs the release script once (see Config.Release).
	Release func(ctx context.Context, m Mode, id string, tag uint64, giveBack bool) (Released, error)
	// Renew queues a renewal of hold id, everything the handle holds (see
	// Config).
	Renew func(ctx context.Context, s redis.Scripter, id string) func() (bool, error)
	// ForceUnlock runs the force-unlock script once under receipt, a key
	// that makes a repeated run report what the first did, aimed at the
	// holds aim names (script.Aim); it returns a script.Force outcome.
	ForceUnlock func(ctx context.Context, receipt string, aim []any) (int64, error)

	// Channel is the channel a waiter for mode m sleeps on.
	Channel func(m Mode) string
	// MaxSleep bounds every sleep of a waiter for mode m; nil: the lease.
	MaxSleep func(m Mode) time.Duration
	// InLine makes the waiters of one client queue behind each other
	// (see wait.WaitInLine) instead of each asking Redis.
	InLine bool
	// Modes is how many modes the lock has: 1 for a mutex, 2 for a
	// read-write lock (see allUnits).
	Modes int
	// Verbs, if set, names the taking and the release of a level of mode
	// Exclusive in errors (an election's "campaign" and "resign"); unset,
	// they are "lock" and "unlock".
	Verbs [2]string
	// Leave, if set, undoes what a blocking wait for mode m left in Redis
	// when it fails (a place in line, an announcement), and reports
	// whether the wait's hold id holds one level of m in Redis: a grant
	// that reached it as it gave up, which the engine then gives back by
	// id. It must be idempotent: it runs without ctx's cancellation, and
	// again when its reply is lost. It runs only when no other wait of
	// the handle for m is under way (see waits). a names the wait that
	// leaves: ID is its hold id, retired by then, and Deadline the latest
	// server time a copy of the script may run at (a later wait of the
	// handle may have begun by then, and left a place of its own).
	Leave func(ctx context.Context, m Mode, a Asking) (granted bool, err error)
	// Place, if set, is the waiter's place for mode m (in line, or an
	// announcement that lapses), which the client's keeper then keeps
	// while the waiter is parked (see perclient.Client.Keep): the waiter
	// attempts only when woken, told to, or after MaxSleep, not to keep
	// its place alive (every GrantLease/3 for a lock with Grants).
	Place func(m Mode) *perclient.Place
	// Grants is set for a lock whose releases grant it to the first
	// waiter in line (see the package doc): its waiters complete a grant
	// with Tracker.claim, and their place is refreshed at least every
	// GrantLease/3 (by their attempts, or by the keeper: see Place).
	// Channel is then the waiter's own.
	Grants bool
	// Fencing is set when a grant's fencing token is the hold's.
	Fencing bool
	// GrantLease, if set, is how long a grant to the handle's waiters
	// lasts, at most GrantLease (fairlock: the shorter of that and the
	// waiter timeout). Their places name it after the hold id (see
	// placeValue) for the release that grants, and Tracker.claim counts a
	// grant's validity with it. Unset, grants last GrantLease.
	GrantLease time.Duration
	// ClaimByAttempt makes the waiters complete a grant by an acquire
	// attempt rather than Tracker.claim (rlock's WithReplicaAck: the
	// attempt waits for the replicas).
	ClaimByAttempt bool
	// LocalHandoff lets an Unlock hand the handle's hold to another
	// goroutine waiting on the handle without a round trip (see
	// Lock.handOver): for a lock that is not fair between processes and
	// whose holds need nothing of their own from Redis (no fencing token,
	// no fixed lease).
	LocalHandoff bool
}

// Asking is what kind of attempt an Acquire is.
type Asking struct {
	// Blocking is set for the attempts of Lock (not TryLock): a fair lock
	// joins its line, a read-write lock's writer announces itself.
	Blocking bool
	// Refused is set when the previous attempt of the same wait was
	// refused without error: an attempt may then skip the checks that one
	// made.
	Refused bool
	// ID is the hold id the attempt is for: the current hold's, or the
	// handle's wait's for a new hold (see Tracker.waitID). Ids are never
	// reused, so a hold of ID that the script finds in Redis is this
	// wait's own: a resend whose reply was lost, or a grant the waiter has
	// not completed.
	ID string
	// Seq numbers the handle's attempts, each higher than the last: a
	// blocking attempt refused leaves it in its place in line, and a
	// grant to the place names it (see script.Grant.Seq); a read-write
	// lock's read level is tagged with it (see Config.Release).
	Seq uint64
	// Deadline is the latest time, on the server's clock in milliseconds,
	// at which a copy of the script may still run (see
	// exactly.RequestWindow); a script that reads the clock refuses a
	// copy that runs later with exactly.Late's error, changing nothing.
	Deadline int64
	// Placed is set for a blocking attempt when an earlier attempt of the
	// same wait may have left a place in line (it was refused, or its
	// outcome is unknown): an acquisition gives the place up. A wait's
	// first attempt has none to give up, which spares the uncontended
	// Lock a command.
	Placed bool
	// Watched is set while a group of locks watches the handle's releases
	// (Watcher.Watch): a refused attempt asks the holder's release to
	// announce itself (see Handle).
	Watched bool
}

// Lock is the engine behind a lock handle: every method a lock package
// exports, given its Kind. It is safe for concurrent use.
type Lock struct {
	k      Kind
	t      *Tracker
	clock  exactly.ServerClock // the server's clock, for the deadlines of scripts
	probes [2]wait.Probe       // what each mode reports as (package observe)
	ops    [2][2]string        // the names of each mode's take and release in errors
	// queued counts the calls waiting at the local line (Tracker.gate)
	// for an exclusive hold, for a local handoff (see handOver); guarded
	// by Tracker.mu.
	queued int
	waits  waits
	// watched counts the handle's open Watches (see Watcher): while there
	// are any, its refused attempts ask for the release to be announced.
	watched atomic.Int32
}

// waits counts the handle's waits in Redis of each mode. Goroutines of one
// handle may wait for a shared mode together (an rwlock's readers), and
// what a wait leaves in Redis (an announcement) is the handle's, shared by
// them: only the last wait of a mode to fail may take it away (Kind.Leave),
// and no wait of that mode starts while it does.
type waits struct {
	mu [2]chan struct{} // per mode, a lock: held by Leave, and to start a wait
	n  [2]atomic.Int64
}

// start counts a wait of mode m in, unless ctx ends first while another
// wait's Leave runs.
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

// end counts a wait of mode m out, and runs leave if it failed and no
// other wait of m is under way. leave calls done once it has finished,
// which may be after it returned (in the background): no wait of m
// starts before.
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
	l := &Lock{k: k, probes: Probes(k.Base, k.Modes), ops: ops}
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

// ops names the operations of each mode in errors.
var ops = [2][2]string{Exclusive: {"lock", "unlock"}, Shared: {"rlock", "runlock"}}

// wait takes a level of mode m in Redis, waiting until it can or ctx is
// done, and records it through in; the local line (Tracker.gate) has let
// the caller through already.
func (l *Lock) wait(ctx context.Context, m Mode, in *intent) error {
	c := perclient.Attach(l.k.RDB)
	defer c.Detach()
	if err := l.waits.start(ctx, m); err != nil {
		return err
	}
	a := Asking{Blocking: true}
	// id and seq name the waiter's last attempt refused without error,
	// which its place in line names: a grant is claimed only when it names
	// both. The id is the wait's (ids are never reused, so no grant to an
	// earlier wait names it); the attempt's number tells a grant that
	// answers the last refused attempt from one that answered an earlier
	// attempt of the same wait and lapsed, whose message is read late,
	// after a later attempt was refused. try and claim run on the waiting
	// goroutine, one after the other.
	var id string
	var seq uint64
	// lostPlace is set when an attempt whose outcome is unknown may have
	// joined the line under an id it then gave up: a release may grant the
	// lock to that id, and its message may have come before the wait was
	// subscribed. The next refused attempt looks (recheck), and gives such
	// a grant back.
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
				// A grant to the given-up id was given back, which
				// granted the lock on, maybe to this wait's place.
				return attempt(ctx)
			}
		}
		return ok, wait, err
	}
	channel, maxSleep := l.k.Channel(m), l.k.Keeping.Lease()
	if l.k.MaxSleep != nil {
		maxSleep = l.k.MaxSleep(m)
	}
	var err error
	switch {
	case l.k.Grants:
		claim := func(ctx context.Context, g script.Grant, base time.Time) (bool, error) {
			if id == "" || g.ID != id || g.Seq != seq {
				// Not a grant to the last refused attempt: one read late,
				// or one to an attempt whose reply was lost. A grant to an
				// id the handle has given up (retired), if it is still in
				// Redis, is given back by that id (never reused, so nothing
				// else can be under it). One to the wait's own id is left
				// to an attempt, which finds it if it stands.
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
		// A waiter refreshes its place in line by its attempts, at least
		// every third of the grant lease, unless the client's keeper
		// keeps it (Kind.Place).
		sleep := min(maxSleep, GrantLease/3)
		var place *perclient.Place
		if l.k.Place != nil {
			place = l.k.Place(m)
			place.Value = func() string { return placeValue(id, seq, l.k.Fencing, l.k.GrantLease) }
			sleep = maxSleep
		}
		recheck := func(ctx context.Context) (bool, error) { return l.recheck(ctx, m, a.ID) }
		err = wait.WaitGranted(ctx, c, channel, sleep, place, claim, recheck, try)
	case l.k.Place != nil:
		err = wait.WaitKept(ctx, c, channel, maxSleep, l.k.Place(m), try)
	case l.k.InLine:
		inLine := func() bool { return l.t.Held(m) == 0 } // a holder needs no line
		err = wait.WaitInLine(ctx, c.Hub, channel, maxSleep, inLine, try)
	default:
		err = wait.Wait(ctx, c.Hub, channel, maxSleep, try)
	}
	// A failed wait retires its id here, while it still holds the
	// handle's local line: once wait returns, another goroutine's TryLock
	// may attempt while the leave runs in the background, and it must do
	// so under an id of its own, which the leave cannot touch.
	last := a.ID
	if err != nil && last != "" {
		l.t.retire(last)
	}
	l.waits.end(m, err != nil && l.k.Leave != nil && last != "", func(done func()) { l.leave(ctx, m, last, done) })
	return err
}

// placeValue is what an acquire script that refused attempt seq under
// hold id left in the waiter's place: the id, prefixed with "f" when a
// grant to it must take a fencing token (see lua/rlock_acquire.lua), "#"
// and the attempt's number, and "/" and the lease of a grant to it in
// milliseconds when it has one of its own (Kind.GrantLease, see
// lua/fairlock_acquire.lua).
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

// recheck reports whether a waiter in line under hold id, just
// subscribed after a refused attempt, must attempt again: id holds the
// lock (a release granted it meanwhile) or it is free (released another
// way, ForceUnlock or an expired lease, with a wake-up published before
// the subscription). One command: a mutex's hash has few fields, its
// holder's id and, with fencing, the hold's token. A holder that is an id
// the handle has given up is a grant to an earlier attempt of the wait
// whose reply was lost (its message came before the subscription): it is
// given back by that id, which grants the lock on, and the waiter
// attempts again.
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

// givenUp reports whether id is a hold id of the handle's that it has
// given up: whatever Redis holds under it is to be given back.
func (l *Lock) givenUp(id string) bool {
	return script.OwnerOf(id) == l.k.Owner && !l.t.inUse(id)
}

// deliver hands a grant that a release of the handle, sent at sent, made
// to grantee, to grantee's wait if it is one of this client's: the
// in-process handoff. The hub accepts it only for a wait parked before
// sent (see hub.Hub.Deliver), so a reply read late never reaches a later
// wait of the grantee.
func (l *Lock) deliver(grantee string, g script.Grant, sent time.Time) {
	c := perclient.Attach(l.k.RDB)
	c.Hub.Deliver(l.k.Keys.WaiterChannel(script.OwnerOf(grantee)), g.Payload(), sent)
	c.Detach()
}

// leave runs Kind.Leave after a failed wait under hold id (retired by
// now), once more if the first failed, all within CleanupTimeout, and
// gives back a grant to id it reports; then it calls done. It waits for
// that only until ctx is done (the wait's ctx, which has usually ended):
// the rest runs in the background (perclient.TidyUp). If both runs fail
// (Redis unreachable), what the wait left expires by itself on the server
// (a waiter's place, a writer's announcement).
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
				// A grant to the wait that gave up: given back by its
				// id, which nothing of the handle uses any more.
				l.t.Undo(ctx, m, id)
			}
			if err == nil || errs.IsWrongType(err) || ctx.Err() != nil {
				return
			}
		}
	})
}

// try makes one attempt to take a level of mode m in Redis, and records
// it through in.
func (l *Lock) try(ctx context.Context, m Mode, in *intent) (bool, error) {
	ok, _, err := l.t.attempt(ctx, m, func(ctx context.Context, id string, seq uint64) (Grant, error) {
		return l.acquire(ctx, m, Asking{ID: id, Seq: seq})
	}, in)
	wait.ReportOf(ctx).Attempt(ctx, ok, err)
	return ok, err
}

// acquire runs the acquire script once for mode m with a deadline (see
// Asking.Deadline), and once more if Redis refused it as late (see
// exactly.InTime): a copy that Redis runs after the deadline, when the
// handle has given the attempt up, takes nothing and joins no line.
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

// Probes returns what the modes of a lock of base b with the given number
// of modes report as: the package name for a one-mode lock (rlock), its
// ".write" and ".read" sides for a read-write lock (rwlock.write).
func Probes(b Base, modes int) [2]wait.Probe {
	if modes < 2 {
		p := wait.NewProbe(b.RDB, b.Pkg, b.Name)
		return [2]wait.Probe{p, p}
	}
	return [2]wait.Probe{
		Exclusive: wait.NewProbe(b.RDB, b.Pkg+".write", b.Name),
		Shared:    wait.NewProbe(b.RDB, b.Pkg+".read", b.Name),
	}
}

// enter waits for n units of the local line (Tracker.gate). An acquire that
// cannot have them at once is reported as parked: it waits behind other
// goroutines of the handle, which is where most waiting happens when a
// handle is shared.
func (l *Lock) enter(ctx context.Context, m Mode, n int64) error {
	if m == Exclusive {
		// Counted as waiting at the gate, for a local handoff (handOver).
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
	r := wait.ReportOf(ctx)
	if r == nil || ctx.Err() != nil {
		return l.t.gate.Acquire(ctx, n)
	}
	if l.t.gate.TryAcquire(n) {
		return nil
	}
	r.Park()
	return l.t.gate.Acquire(ctx, n)
}

// ReleaseTimeout bounds a release (Unlock, RUnlock, a permit's Release,
// the end of Do), which runs without the caller's cancellation: a
// deferred Unlock after a cancelled request still frees the lock at once.
const ReleaseTimeout = 5 * time.Second

// ReleaseContext returns the context a release runs on: ctx's values
// without its cancellation or deadline, bounded by ReleaseTimeout.
func ReleaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
}

// release releases the level of mode m that r (nil: a plain read)
// holds in hold h, on ReleaseContext(ctx): r leaves h's holders, and the
// level goes in Redis only with its last holder (see Tracker.leave).
func (l *Lock) release(ctx context.Context, h *hold, r *record, m Mode) error {
	ctx, cancel := ReleaseContext(ctx)
	defer cancel()
	return l.t.releaseHold(ctx, h, r, m)
}

// forceTries bounds how many times ForceUnlock reads the holds again
// because they changed between its read and its script.
const forceTries = 8

// ForceUnlock deletes the lock whoever holds it and reports whether there
// was one. A repeated run after a lost reply reports what the first did.
//
// It aims at the holds it read (script.Aim): the script deletes the lock
// only if it finds exactly those, so a copy of it that Redis runs late,
// after the lock was released and taken again, deletes nothing. When the
// holds changed between the read and the script, it reads them again.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	// The hold the handle has now: whoever deletes the lock, it is over.
	before := l.t.current()
	var outcome int64 = script.ForceMoved
	var aim []any
	var err error
	for try := 0; outcome == script.ForceMoved && err == nil; try++ {
		if try == forceTries {
			err = errors.New("the lock's holds kept changing; try again")
			break
		}
		outcome, aim, err = l.forceOnce(ctx)
	}
	if err != nil {
		return false, l.Wrap("force unlock", err)
	}
	// Whoever deleted the lock, the hold the handle had is over; so are
	// the holds and waits whose ids the script found and deleted, whatever
	// the order of the replies. It waits for nothing: a Lost hook, or a
	// ctx with a deadline, may call it while a script of the handle is in
	// flight (see Tracker.forced).
	l.t.forced(before, func(id string) bool { return aimsAt(aim, id) })
	return outcome == script.ForceDeleted, nil
}

// aimsAt reports whether aim names hold id: a lock hash's field is a hold
// id, or one prefixed with a mode and ":" (a read-write lock's "w:" and
// "r:").
func aimsAt(aim []any, id string) bool {
	return slices.ContainsFunc(aim, func(f any) bool {
		s, _ := f.(string)
		return s == id || strings.HasSuffix(s, ":"+id)
	})
}

// forceOnce reads the lock's holds and runs the force-unlock script aimed
// at them, under a receipt of its own; it returns the outcome and the aim.
func (l *Lock) forceOnce(ctx context.Context) (int64, []any, error) {
	fields, err := l.k.RDB.HGetAll(ctx, l.k.Keys.Lock()).Result()
	if err != nil && !errs.IsWrongType(err) {
		return 0, nil, err
	}
	// A key of another type is the script's to report, as every script
	// does, naming the key.
	aim := script.Aim(fields)
	receipt := l.k.Keys.Receipt(keyspace.ReceiptForce, keyspace.NewRequestID())
	var outcome int64
	// The script needs no deadline: the aim, not the receipt, keeps a late
	// copy from deleting a later hold.
	err = exactly.Once(ctx, nil, func() string { return receipt }, func(receipt string, _ int64) (err error) {
		outcome, err = l.k.ForceUnlock(ctx, receipt, aim)
		return err
	})
	// The outcome is known: the receipt has served. Should deleting it
	// fail, it expires by itself. A copy of the script still on its way
	// finds no receipt; the aim keeps it from deleting a later hold.
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
// hash whose fields are hold ids: false when the handle holds nothing.
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

// Token returns the fencing token of the current hold.
func (l *Lock) Token() uint64 { return l.t.Token() }

// Wrap wraps err with the package, operation and name of the lock.
func (l *Lock) Wrap(op string, err error) error {
	return errs.Wrap(l.k.Pkg, op, l.k.Name, err)
}

// Base is what every handle of a primitive has: its client, its name and
// keys, and an owner id of its own.
type Base struct {
	Pkg     string // the package name, for errors: "rlock"
	RDB     redis.UniversalClient
	Name    string
	Keys    keyspace.Names
	Owner   string // the handle's owner id, random
	Sharded bool   // notify with SPUBLISH (Redis Cluster) rather than PUBLISH
}

// NewBase returns the Base of a new handle of package pkg on the
// primitive called name. It panics when rdb is nil or name is empty: a
// programmer error visible at the call site.
func NewBase(pkg string, rdb redis.UniversalClient, name string) Base {
	if rdb == nil {
		panic(pkg + ": New with nil redis client")
	}
	if name == "" {
		panic(pkg + ": New with empty name")
	}
	return Base{Pkg: pkg, RDB: rdb, Name: name, Keys: keyspace.NewNames(name), Owner: keyspace.NewOwnerID(), Sharded: perclient.Sharded(rdb)}
}
