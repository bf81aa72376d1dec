package hold

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/watchdog"
)

// Passing the lock between handles of one process (see the package doc,
// "Passing between handles"). A release that would hand the lock to
// another process's waiter through Redis, with a waiter of another handle
// of the same client parked on the same lock, passes the lock to that
// waiter instead, and lets it go on at once: the release script, sent
// next, makes it the holder in Redis (rlock_unlock's ARGV[10]). Until
// that script has run, the lock is still the releaser's in Redis, and the
// releaser's process is the grantee's, so nobody else can take it; the
// grantee's hold is valid no longer than the releaser's was (Transfer.valid
// caps it until the release's reply), and ends as lost if the release
// fails. The grantee's own scripts wait for the release's outcome, so
// that Redis runs them after it.

// Transfer is one passing of the lock from a releasing handle to a parked
// waiter of another handle of the same client.
type Transfer struct {
	To   string    // the grantee's owner id
	Mark string    // the mark of the grantee's last refused attempt, as its place holds it
	at   time.Time // when it was decided: the release is sent after it
	// lease is the grantee's first validity from at: its own lease or the
	// grant lease, whichever is shorter (the script sets the grant lease).
	lease time.Duration
	// valid is when the releaser's hold stopped being valid: the
	// grantee's hold is valid no longer until the release has passed it.
	valid time.Time
	run   run

	done chan struct{} // closed once the release's outcome is known

	mu       sync.Mutex
	finished bool
	ok       bool     // the release made the grantee the holder, as far as anyone can tell
	t        *Tracker // the grantee's, once it claimed the transfer
	h        *hold
}

// run is a chain of holds of one process, each passed the lock by the
// one before within the process (a local handoff or a Transfer): how many
// passes it has seen, and when its first hold began. It bounds how long
// the processes waiting in Redis wait for it (see maxPasses).
type run struct {
	passes int
	since  time.Time
}

// finish records the outcome of the release that carries tr, and ends
// the grantee's hold as lost if the release did not make it the holder,
// before the grantee's scripts waiting for tr go on (awaitTransfer).
func (tr *Transfer) finish(ok bool) {
	tr.mu.Lock()
	tr.finished, tr.ok = true, ok
	t, h := tr.t, tr.h
	tr.mu.Unlock()
	switch {
	case t == nil:
	case ok:
		h.wd.Extend(tr.at, tr.lease)
	default:
		t.end(h, errTransferLost)
	}
	close(tr.done)
}

// pending reports whether the release that carries tr is still under way.
func (tr *Transfer) pending() bool {
	select {
	case <-tr.done:
		return false
	default:
		return true
	}
}

// succeeded waits for tr's outcome and reports it.
func (tr *Transfer) succeeded() bool {
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ok
}

var errTransferLost = fmt.Errorf("%w: the hold passed to it within the process was gone from Redis before the release reached it", internal.ErrLost)

// errTransferPending is a renewal's outcome while the release that passed
// the hold has not run: the watchdog tries again shortly, and the hold's
// validity stays bounded by the releaser's meanwhile.
var errTransferPending = fmt.Errorf("%w: the release that passed the hold is still under way", watchdog.ErrPending)

// cohorts lists, per client and lock, the parked waiters of handles that
// may be passed the lock (see Lock.offer), in the order they parked.
var cohorts = struct {
	sync.Mutex
	m map[cohortKey][]*candidate
}{m: make(map[cohortKey][]*candidate)}

type cohortKey struct {
	rdb  redis.UniversalClient
	lock string
}

// candidate is a handle's wait in Redis, offered for a transfer.
type candidate struct {
	l    *Lock
	mark float64   // the mark of its last refused attempt; 0 while it attempts
	tr   *Transfer // a transfer made to it that it has not taken yet
}

func (l *Lock) cohort() cohortKey { return cohortKey{l.k.RDB, l.k.Keys.Lock()} }

// passable reports whether the handle's waits and releases take part in
// transfers: a lock that grants, not fair between processes, whose holds
// need nothing of their own from Redis (Kind.LocalHandoff).
func (l *Lock) passable(m Mode) bool {
	return m == Exclusive && l.k.Grants && l.k.LocalHandoff && l.k.ReleaseTo != nil
}

// offer lists the handle's wait for a transfer, its last attempt refused
// with mark (0: an attempt is under way, and it is passed over).
func (l *Lock) offer(mark float64) {
	cohorts.Lock()
	defer cohorts.Unlock()
	if l.cand == nil {
		l.cand = &candidate{l: l}
		k := l.cohort()
		cohorts.m[k] = append(cohorts.m[k], l.cand)
	}
	l.cand.mark = mark
}

// withdraw takes the handle's wait off the list when it ends. A transfer
// made to it that it did not take is waited for: what the wait does next
// (leave the line, give a grant back) must run in Redis after it.
func (l *Lock) withdraw() {
	cohorts.Lock()
	c := l.cand
	if c != nil {
		k := l.cohort()
		list := slices.DeleteFunc(cohorts.m[k], func(o *candidate) bool { return o == c })
		if len(list) == 0 {
			delete(cohorts.m, k)
		} else {
			cohorts.m[k] = list
		}
		l.cand = nil
	}
	cohorts.Unlock()
	if c != nil && c.tr != nil {
		<-c.tr.done
	}
}

// takeTransfer returns the transfer made to the handle's wait, if any, and
// forgets it.
func (l *Lock) takeTransfer() *Transfer {
	cohorts.Lock()
	defer cohorts.Unlock()
	if l.cand == nil {
		return nil
	}
	tr := l.cand.tr
	l.cand.tr = nil
	return tr
}

// pick is Config.Pick: for the release of the last level of a hold valid
// until valid, the latest of run r, it finds a parked waiter of another
// handle of the client on the same lock, first parked first, and lets it
// go on (a grant delivered to its wait), unless the run has passed the
// lock maxPasses times already, or more than once and for maxPassTime
// (the bounds of local handoffs), or the releaser's hold is not valid for
// long enough. When it makes no transfer (those reasons, or no waiter
// parked to take it: all attempting, or not parked yet), it returns the
// owner ids of the waiters of the client's other handles on the lock, all
// of them, for the grant in Redis to pass over: the lock leaves the
// process. Otherwise, with one of them first in the Redis line, it would
// stay in the process, for a fresh run. Both come from one look at the
// client's waiters on the lock, under cohorts' lock.
func (l *Lock) pick(valid time.Time, r run) (*Transfer, []string) {
	if !transfersOn.Load() {
		return nil, nil
	}
	c := internal.Attach(l.k.RDB)
	defer c.Detach()
	cohorts.Lock()
	defer cohorts.Unlock()
	waiting := cohorts.m[l.cohort()]
	if r.open() {
		if tr := l.transfer(c, waiting, valid, r); tr != nil {
			return tr, nil
		}
	}
	return nil, l.passOver(waiting)
}

// passOver returns the owner ids of the waiters of other handles among
// waiting (the client's on the lock, parked or attempting: their places in
// line stay), first parked first; nil when there are none. There is no cap:
// one left out that stands ahead of another process's waiter in line is
// granted the lock and begins a fresh run, and the bound on how long other
// processes wait is gone (with a cap of 32 and 48 handles waiting, a
// waiter of another process held after 16 short critical sections of the
// process instead of 8). The script's work grows with them: it reads the
// name of each (a table entry) and the place of each it finds in line
// ahead of the first live waiter of another process (an EXISTS), as the
// client's keeper reads every parked waiter's place once a second.
func (l *Lock) passOver(waiting []*candidate) []string {
	var over []string
	for _, cand := range waiting {
		if cand.l != l {
			over = append(over, cand.l.k.Owner)
		}
	}
	return over
}

// transfer makes the transfer of pick to the first of waiting that can
// take it, if any, delivering it through c's hub; cohorts' lock is held.
func (l *Lock) transfer(c *internal.Client, waiting []*candidate, valid time.Time, r run) *Transfer {
	for _, cand := range waiting {
		if cand.l == l || cand.mark == 0 || cand.tr != nil {
			continue
		}
		now := time.Now()
		tr := &Transfer{
			To: cand.l.k.Owner, Mark: placeValue(cand.mark, false, 0), at: now,
			lease: min(GrantLease, cand.l.t.cfg.Lease),
			run:   run{passes: r.passes + 1, since: r.since},
			done:  make(chan struct{}),
		}
		if time.Until(valid) < tr.lease/4 {
			// The grantee would hold the lock for too short a time
			// before the release has passed it (see ClaimTransfer).
			return nil
		}
		tr.valid = valid
		// Set before the delivery: the waiter takes it under cohorts'
		// lock, which is held until the delivery's outcome is known.
		cand.tr = tr
		if c.Hub.Deliver(cand.l.k.Channel(Exclusive), hub.Grant{Mark: cand.mark}, now) {
			return tr
		}
		cand.tr = nil // not parked after all
	}
	return nil
}

// ClaimTransfer completes the hold of one level of mode m that tr passed
// to the handle, whose wait's last attempt, of mark seq, was refused: at
// once, valid for tr's lease from when tr was made, and no longer than the
// releaser's hold until the release that carries tr has run. It reports
// false when that release is known to have failed already: an attempt
// follows. When ctx is done, it waits for that release and gives the
// level back if it had been passed, and returns ctx's error.
func (t *Tracker) ClaimTransfer(ctx context.Context, m Mode, tr *Transfer, seq uint64) (bool, error) {
	err := ctx.Err()
	if err == nil {
		err = t.op.Acquire(ctx, 1)
	}
	if err != nil {
		// The release may still be under way: whether there is a level
		// to give back is known once it has run, which the caller does
		// not wait for.
		t.later(ctx, ReleaseTimeout+CleanupTimeout, func(ctx context.Context) {
			if tr.succeeded() {
				t.giveBack(ctx, owed{m, 1, seq})
			}
		})
		return false, err
	}
	defer t.op.Release(1)
	if t.Held(m) != 0 {
		// Cannot be: a waiter holds nothing. Let an attempt sort it out,
		// after the release has run.
		tr.succeeded()
		return false, nil
	}
	// Under tr.mu, so that finish either finds the hold or the hold is
	// never begun for a release known to have failed. A pass taken too
	// late to be worth holding (the waiter's goroutine was slow to run)
	// is left to the attempt that follows, as Claim leaves a grant.
	tr.mu.Lock()
	finished := tr.finished
	valid := watchdog.ValidUntil(tr.at, tr.lease)
	if !finished && tr.valid.Before(valid) {
		valid = tr.valid
	}
	if finished && !tr.ok || time.Until(valid) < tr.lease/4 {
		tr.mu.Unlock()
		if !finished {
			tr.succeeded() // the attempt must run after the release
		}
		return false, nil
	}
	var levels Levels
	levels[m] = 1
	h := t.begin(levels, 0, tr.at, tr.lease, tr)
	if !finished {
		h.wd.Limit(tr.valid)
		tr.t, tr.h = t, h
	}
	tr.mu.Unlock()
	return true, nil
}

// awaitTransfer waits, before a script of the handle runs, for the release
// that passed the current hold to the handle, if it is still under way:
// Redis must run that first.
func (t *Tracker) awaitTransfer(ctx context.Context) error {
	h := t.current()
	if h == nil || h.transfer == nil {
		return nil
	}
	select {
	case <-h.transfer.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// passOn reports whether hold h's run may pass the lock on once more
// within the process (see maxPasses), and counts the pass if so.
func (t *Tracker) passOn(h *hold) bool {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	if !h.run.open() {
		return false
	}
	h.run.passes++
	return true
}

// open reports whether the run may pass the lock on once more: at most
// maxPasses times in a row and, after the first, only within maxPassTime
// of its start.
func (r run) open() bool {
	return r.passes < maxPasses && (r.passes == 0 || time.Since(r.since) < maxPassTime)
}

// transfersOn switches passing between handles (and passing over the
// process's waiters) on or off for the whole process; on by default.
var transfersOn = func() *atomic.Bool { var b atomic.Bool; b.Store(true); return &b }()

// SetTransfers turns passing between handles of a process on or off. It
// exists for the bench module, which measures the workers scenario both
// ways in one run to tell whether the transfer earns its complexity.
func SetTransfers(on bool) { transfersOn.Store(on) }
