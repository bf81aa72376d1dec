package hold_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// Do registers the cancel of fn's ctx with the hold it runs in
// (Tracker.onEnd), to cancel it should the hold end first, and takes it
// off when Do returns. It used to keep every Do's cancel function, and
// the ctx it cancels, until the hold ended, and a hold that lasts kept
// growing: a read-write lock's hold spans every read level of the handle,
// so a server whose requests each run RDo on a shared handle, with
// another read always in progress, never ends its hold; a long Do that
// re-enters with Do in a loop is the same on a mutex.
func TestDoForgetsItsCancelWhenItReturns(t *testing.T) {
	srv := redistest.SharedServer(t)
	ctx := t.Context()
	const calls = 200
	noop := func(context.Context) error { return nil }

	t.Run("rwlock", func(t *testing.T) {
		rw := rwlock.New(srv.NewClient(t), redistest.UniqueName(t))
		if err := rw.RLock(ctx); err != nil { // a read that keeps the hold
			t.Fatal(err)
		}
		defer func() { _ = rw.RUnlock(ctx) }()
		for range calls {
			if err := rw.RDo(ctx, noop); err != nil {
				t.Fatal(err)
			}
		}
		if n := hold.Ends(rw); n > 1 {
			t.Errorf("after %d RDo calls that returned, the hold keeps %d cancel functions", calls, n)
		}
	})
	t.Run("rlock", func(t *testing.T) {
		m := rlock.New(srv.NewClient(t), redistest.UniqueName(t))
		err := m.Do(ctx, func(ctx context.Context) error {
			for range calls {
				if err := m.Do(ctx, noop); err != nil {
					return err
				}
			}
			if n := hold.Ends(m); n > 1 {
				t.Errorf("after %d re-entrant Do calls that returned, the hold keeps %d cancel functions", calls, n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
