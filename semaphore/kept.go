package semaphore

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/perclient"
)

// The permits of a Leased that the watchdog keeps alive (lease 0): each is
// a hold of its own in the engine (hold.Tracker), with its own Done, in
// kept while its hold goes on.
//
// When the watchdog gives a permit up, its renewals having failed until
// its lease ran out here, the hold ends owing the permit's release (see
// hold.Tracker.owe): the server's clock may run slow, or a renewal have
// gone through unseen, and the permit still stand. Nothing calls that
// Tracker again for the permit, so the handle owns the debt: the Tracker
// moves from kept to owed, its release is sent at once in the background
// (bounded by hold.CleanupTimeout), and again before the handle's next
// Acquire, TryAcquire, Release or Renew, until it goes through. So is the
// release a failed Release owes (hold.Tracker.abandon).
//
// A release by id frees whatever permit stands under the id, and a permit
// id is a capability: Renew may take the permit up again after its loss.
// A debt is therefore the Tracker's that gave the permit up, and a Renew
// of the id through this handle forgives it before its own script runs
// (hold.Tracker.Forgive waits for a send of it in flight): the owed
// release runs before the renewal or not at all. The id's next Tracker
// is a new one (keep): a Tracker whose hold ended is never adopted again,
// so a debt never rides along with a later hold of its id.
//
// Limits: a renewal of the id through another handle or process after the
// loss is not seen, and the owed release frees the permit it renewed; a
// Renew that runs while the watchdog gives the same permit up (between
// Renew's script and keep) forgives the debt that loss makes, but cannot
// stop a send of it already in flight; a send whose reply was lost may
// run after a later Renew, as any Release may.

// keep hands the permit id, renewed at sent, to the watchdog, or records
// the renewal if the watchdog keeps it already. The id is renewed: what
// a Tracker that gave it up still owes is forgiven.
//
// A Tracker in kept may have just ended (lost, in the instant between
// the watchdog's end of its hold and the Lost hook that takes it out of
// kept): Touch then reports no hold, and a new Tracker takes its place;
// the Lost hook, finding another Tracker under the id, leaves it there.
// The new Tracker adopts the permit under l.mu, so that a Release that
// takes it out of kept finds its hold begun. No deadlock: Adopt takes
// the Tracker's mu and the watchdog's, neither of which is held while
// the Lost hook runs (it takes l.mu: see trackerOf), and a new Tracker
// has no hold for Adopt to end, which would run the hook under l.mu.
func (l *Leased) keep(id string, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.owed, id)
	if t := l.kept[id]; t != nil && t.Touch(sent) {
		return
	}
	t := l.tracker(id)
	l.kept[id] = t
	t.Adopt(sent)
}

// took puts t, the Tracker whose attempt took the permit id, in kept. Its
// hold may have ended already (lost as the attempt returned, its Lost
// hook finding another entry under the id, or none): then it goes to owed
// if it owes the release. Under l.mu, the hold is over or its hook will
// find t in kept.
func (l *Leased) took(id string, t *hold.Tracker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case t.Held(hold.Exclusive):
		l.kept[id] = t
	case t.Owes():
		l.owed[id] = t
	}
}

// forget stops tracking the permit id and returns its tracker, the one
// that keeps it or the one that owes its release, nil if none; the
// caller releases or drops its hold.
func (l *Leased) forget(id string) *hold.Tracker {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.kept[id]
	if t == nil {
		t = l.owed[id]
	}
	delete(l.kept, id)
	delete(l.owed, id)
	return t
}

// lost takes t, the Tracker of the permit id whose hold the watchdog gave
// up, from kept to owed, unless the id was renewed since (keep put a new
// Tracker in its place), and sends what it owes in the background.
func (l *Leased) lost(id string, t *hold.Tracker) {
	l.mu.Lock()
	mine := l.kept[id] == t
	if mine {
		delete(l.kept, id)
		l.owed[id] = t
	}
	l.mu.Unlock()
	if mine {
		c := perclient.Attach(l.rdb)
		c.Tidy(context.Background(), hold.CleanupTimeout, func(ctx context.Context) { _ = l.repayOf(ctx, id, t) })
		c.Detach()
	}
}

// forgive drops the debt of the permit id, renewed now (see keep), once
// no send of it is in flight.
func (l *Leased) forgive(ctx context.Context, id string) error {
	l.mu.Lock()
	t := l.owed[id]
	delete(l.owed, id)
	l.mu.Unlock()
	if t == nil {
		return nil
	}
	err := t.Forgive(ctx)
	if err != nil {
		l.stillOwed(id, t)
	}
	return err
}

// stillOwed puts t, a Tracker of the permit id taken out of kept or owed
// by a call that failed (a Release, or a Renew before its script), in
// owed if it owes anything and the id has no Tracker since: what it owes
// is sent before the handle's next call.
func (l *Leased) stillOwed(id string, t *hold.Tracker) {
	if !t.Owes() {
		return
	}
	l.mu.Lock()
	if l.kept[id] == nil && l.owed[id] == nil {
		l.owed[id] = t
	}
	l.mu.Unlock()
}

// repay sends what the permits the watchdog gave up owe, before a call of
// the handle. What fails stays owed for the next call.
func (l *Leased) repay(ctx context.Context) {
	l.mu.Lock()
	if len(l.owed) == 0 {
		l.mu.Unlock()
		return
	}
	debts := make(map[string]*hold.Tracker, len(l.owed))
	for id, t := range l.owed {
		debts[id] = t
	}
	l.mu.Unlock()
	for id, t := range debts {
		if err := l.repayOf(ctx, id, t); err != nil && ctx.Err() != nil {
			return
		}
	}
}

// repayOf sends what t, the Tracker that gave up the permit id, owes, and
// drops the debt once nothing is owed. A debt forgiven meanwhile (Renew)
// has nothing left to send.
func (l *Leased) repayOf(ctx context.Context, id string, t *hold.Tracker) error {
	err := t.Repay(ctx)
	if err == nil && !t.Owes() {
		l.mu.Lock()
		if l.owed[id] == t {
			delete(l.owed, id)
		}
		l.mu.Unlock()
	}
	return err
}

// Done returns a channel that is closed when this handle's watchdog stops
// keeping the permit id alive: after Release of id through this handle
// (successful or not), a Renew of it with a positive lease, or when the
// watchdog gives it up because a renewal found it gone or renewals kept
// failing until its lease ran out (then WithOnLost's function runs). For
// an id the watchdog does not keep alive for this handle (acquired with a
// positive lease, or through another handle) it returns a closed channel.
func (l *Leased) Done(id string) <-chan struct{} {
	l.mu.Lock()
	t := l.kept[id]
	l.mu.Unlock()
	if t == nil {
		return closed
	}
	return t.Done()
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
