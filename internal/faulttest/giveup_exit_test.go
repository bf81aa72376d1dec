package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// helperGiveUp waits for the lock with a deadline (its fifth argument),
// which ends behind a holder; then it waits for the clean-ups that the
// failed wait left to the background, as the docs ask before os.Exit
// (rlock.Tidied: every primitive's), writes "gave up" and returns: the
// process exits at once.
func helperGiveUp(ctx context.Context, args []string, in <-chan string) error {
	p, rdb, name, lease, err := parseHelperArgs(args[:4])
	if err != nil {
		return err
	}
	defer rdb.Close()
	wait, err := time.ParseDuration(args[4])
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := p.new(rdb, name, lease).Lock(lctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Lock behind the holder = %v, want its deadline", err)
	}
	tctx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if err := rlock.Tidied(tctx); err != nil {
		return err
	}
	fmt.Println("gave up")
	return nil
}

// A process whose wait gave up at its deadline and that exits right after
// rlock.Tidied (issue 42) leaves nothing in line: the waiter behind it
// holds within 300ms of the holder's release, where a place left behind
// would have cost it a grant lease (3s) granted to the dead process.
func TestGiveUpAndExitLeavesNothing(t *testing.T) {
	forEachGranting(t, func(t *testing.T, p primitive) {
		srv := redistest.SharedServer(t)
		admin := srv.NewClient(t)
		name := redistest.UniqueName(t)
		const lease = 30 * time.Second
		holder := p.new(srv.NewClient(t), name, lease)
		if err := holder.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		h := redistest.StartHelper(t, "giveup", append(helperArgs(p, srv.Addr(), name, lease), "2s")...)
		parked(t, admin, name, 1)
		next := p.new(srv.NewClient(t), name, lease)
		got := lockAsync(t.Context(), next)
		parked(t, admin, name, 2)
		if line := h.Next(t, 10*time.Second); line != "gave up" {
			t.Fatalf("the helper said %q, want gave up (stderr %s)", line, h.Stderr())
		}
		select {
		case <-h.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the helper did not exit")
		}
		released := time.Now()
		if err := holder.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		d := heldAt(t, got, 10*time.Second, "the waiter behind the one that gave up").Sub(released)
		t.Logf("the waiter behind the process that gave up held %v after the release", d.Round(time.Millisecond))
		if d > 300*time.Millisecond {
			t.Errorf("the waiter held %v after the release, want within 300ms", d)
		}
		if err := next.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
