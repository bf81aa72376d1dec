package hold

import (
	"context"
	"time"
)

// The calls below serve a handle that keeps a Tracker per hold it did not
// take through Attempt (a leased permit, renewed by id): it touches a hold
// that goes on, and owns what a hold given up still owes once nothing
// calls the Tracker for that hold any more.

// Touch counts the validity of the current hold from sent, a renewal of
// it sent outside the Tracker, and reports whether there is one: false
// once the hold has ended, lost or released. Unlike Adopt it never
// begins a hold: a Tracker whose hold ended may owe its release (see
// owe), which a new hold would send with its next script.
func (t *Tracker) Touch(sent time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return false
	}
	t.cur.wd.Touch(sent)
	return true
}

// Owes reports whether the handle owes a release or a give-back: a hold
// it gave up (lost, or a release that failed), or a give-back that
// failed, still to be sent.
func (t *Tracker) Owes() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.owed) > 0 || t.giving > 0
}

// Repay sends what the handle owes, oldest first, serialized with its
// other scripts, as its next attempt would (repay). It returns the first
// failure; what failed stays owed.
func (t *Tracker) Repay(ctx context.Context) error {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return err
	}
	defer t.op.Release(1)
	return t.repay(ctx)
}

// Forgive drops what the handle owes, once no script of the handle is in
// flight (a Repay), or returns ctx's error and drops nothing: a release
// owed by a hold the handle gave up, which a later hold may make wrong (a
// leased permit renewed by id). What was sent runs before Forgive returns,
// or never, except a copy of a send whose reply was lost.
func (t *Tracker) Forgive(ctx context.Context) error {
	if err := t.op.Acquire(ctx, 1); err != nil {
		return err
	}
	defer t.op.Release(1)
	t.mu.Lock()
	t.owed = nil
	t.mu.Unlock()
	return nil
}
