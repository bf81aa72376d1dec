package hold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A release whose reply says the hold has nothing left ends it, and the
// process's records of the hold end with it. Here a write Do downgrades
// (a plain read on the write hold's units), and the read level goes from
// Redis unseen (as a late copy of an earlier release of a read level
// taken again under the same hold id would take it: see the package
// doc). The write release then reports no level left. The hold used to
// end as released with the read still counted: its RUnlock found no hold
// and the read's unit of the local line was never given back, so the
// handle's next Lock waited for ever. The read level was lost, not
// released: the Lost hook hears of it.
func TestReleaseEndingHoldForgetsRecords(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	lost := make(chan error, 4)
	rw := rwlock.New(srv.NewClient(t), name, rwlock.WithOnLost(func(err error) { lost <- err }))

	err := rw.Do(ctx, func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil { // a downgrade
			return err
		}
		fields, err := admin.HKeys(ctx, keyspace.NewNames(name).Lock()).Result()
		if err != nil {
			return err
		}
		for _, f := range fields {
			if strings.HasPrefix(f, "r:") { // the read level, gone unseen
				if err := admin.HDel(ctx, keyspace.NewNames(name).Lock(), f).Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	_ = rw.RUnlock(ctx) // the downgraded read's release: its level is gone

	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rw.Lock(lctx); err != nil {
		t.Fatalf("Lock after the hold ended: %v (a unit of the local line leaked)", err)
	}
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, errs.ErrLost) {
			t.Errorf("Lost hook: %v; want ErrLost", err)
		}
	default:
		t.Error("the read level was lost without the Lost hook hearing of it")
	}
}
