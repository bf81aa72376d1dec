package hold_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// errLostReply stands for a reply lost on the way back: the script may
// have run.
var errLostReply = io.ErrUnexpectedEOF

// replyErr is an error reply from Redis: the script did not run.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// fake is a lock in memory behind a Tracker, whose release replies can be
// scripted: each entry of lose makes one release run (or not) and then
// fail as given.
type fake struct {
	mu      sync.Mutex
	levels  hold.Levels // what "Redis" holds for the handle
	fail    []fakeFail  // consumed one per release
	calls   []int64     // the levels of the mode "Redis" held at every release
	lost    []error     // the Lost hook's calls
	tracker *hold.Tracker
}

type fakeFail struct {
	run   bool          // the release ran before the failure
	err   error         // the failure
	wait  bool          // the release waits for a connection until its ctx ends, and fails with ctx's error
	block chan struct{} // if set, the release waits for it to be closed first (Redis slow to answer)
}

func newFake(t *testing.T) *fake {
	_, rdb := redistest.Mini(t)
	f := &fake{}
	f.tracker = hold.New(hold.Config{
		RDB:     rdb,
		Lease:   time.Minute,
		Release: f.release,
		Lost:    f.onLost,
	})
	t.Cleanup(f.tracker.Drop)
	return f
}

func (f *fake) onLost(err error) {
	f.mu.Lock()
	f.lost = append(f.lost, err)
	f.mu.Unlock()
}

func (f *fake) release(ctx context.Context, m hold.Mode, _ string, _ uint64, _ bool) (hold.Released, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, f.levels[m])
	var ff fakeFail
	if len(f.fail) > 0 {
		ff, f.fail = f.fail[0], f.fail[1:]
	}
	if ff.block != nil {
		f.mu.Unlock()
		<-ff.block
		f.mu.Lock()
	}
	if ff.wait {
		// As go-redis waits for a free connection of its pool: until
		// ctx ends (or its PoolTimeout, longer than CleanupTimeout).
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return hold.Released{}, ctx.Err()
	}
	if ff.err != nil && !ff.run {
		return hold.Released{}, ff.err
	}
	var out hold.Released
	switch {
	case f.levels[m] == 0:
		out = hold.Released{NotHeld: true}
	default:
		f.levels[m]--
		out = hold.Released{Levels: f.levels}
	}
	return out, ff.err
}

// acquire takes one level of m, with the outcome given by fail.
func (f *fake) acquire(ctx context.Context, m hold.Mode, fail fakeFail) (bool, error) {
	ok, _, err := f.tracker.Attempt(ctx, m, func(context.Context, string, uint64) (hold.Grant, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if fail.err != nil && !fail.run {
			return hold.Grant{}, fail.err
		}
		f.levels[m]++
		return hold.Grant{OK: true, Levels: f.levels}, fail.err
	})
	return ok, err
}

func (f *fake) mustAcquire(t *testing.T, m hold.Mode) {
	t.Helper()
	if ok, err := f.acquire(t.Context(), m, fakeFail{}); !ok || err != nil {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
}

func (f *fake) failNext(fails ...fakeFail) {
	f.mu.Lock()
	f.fail = append(f.fail, fails...)
	f.mu.Unlock()
}

func (f *fake) held(m hold.Mode) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.levels[m]
}

func TestReleaseLostReplyLastLevel(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	f.failNext(fakeFail{run: true, err: errLostReply})
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatalf("Release with its reply lost = %v, want nil", err)
	}
	if !redistest.Closed(f.tracker.Done()) || len(f.lost) != 0 {
		t.Fatalf("Done closed %v, losses %v: want a plain release", redistest.Closed(f.tracker.Done()), f.lost)
	}
	if len(f.calls) != 2 {
		t.Fatalf("%d release runs, want the lost one and one retry", len(f.calls))
	}
}

func TestFailedLastReleaseEndsHold(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	unreachable := fakeFail{err: errLostReply}
	f.failNext(unreachable, unreachable, unreachable)
	if err := f.tracker.Release(t.Context(), hold.Exclusive); !errors.Is(err, errLostReply) {
		t.Fatalf("Release = %v, want the failure", err)
	}
	if !redistest.Closed(f.tracker.Done()) {
		t.Fatal("Done open after the last release failed: the watchdog would keep the lock alive")
	}
	// Its release is owed by the hold's id, and sent before the handle's
	// next script: a later Release (the handle holds nothing) releases it.
	if err := f.tracker.Release(t.Context(), hold.Exclusive); !errors.Is(err, errs.ErrNotHeld) || f.held(hold.Exclusive) != 0 {
		t.Fatalf("later Release = %v with %d levels left; want ErrNotHeld, none", err, f.held(hold.Exclusive))
	}
}

// A failed release of a level that is not the hold's last (here the
// write level under a read level: Redis keeps one level per mode per
// hold) keeps the hold: the level is owed, the read goes on.
func TestFailedInnerReleaseKeepsHold(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	f.mustAcquire(t, hold.Shared)
	f.failNext(fakeFail{err: replyErr("ERR boom")})
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err == nil {
		t.Fatal("Release succeeded")
	}
	if redistest.Closed(f.tracker.Done()) || len(f.calls) != 1 {
		t.Fatalf("Done closed %v after %d runs: an error reply is final and not the last level", redistest.Closed(f.tracker.Done()), len(f.calls))
	}
	if f.tracker.Held(hold.Exclusive) || !f.tracker.Held(hold.Shared) {
		t.Fatalf("held write %v, read %v after the failed write release; want false and true (the write level owed)",
			f.tracker.Held(hold.Exclusive), f.tracker.Held(hold.Shared))
	}
}

func TestReleaseCancelledEndsHold(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f.failNext(fakeFail{err: errLostReply})
	err := f.tracker.Release(ctx, hold.Exclusive)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Release on a done ctx = %v, want an error matching context.Canceled", err)
	}
	if !redistest.Closed(f.tracker.Done()) {
		t.Fatal("Done open after the last release failed")
	}
}

func TestReleaseNotHeldIsLoss(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	f.mu.Lock()
	f.levels = hold.Levels{} // expired in Redis
	f.mu.Unlock()
	if err := f.tracker.Release(t.Context(), hold.Exclusive); !errors.Is(err, errs.ErrNotHeld) {
		t.Fatalf("Release = %v, want ErrNotHeld", err)
	}
	if len(f.lost) != 1 || !errors.Is(f.lost[0], errs.ErrLost) {
		t.Fatalf("Lost hook calls %v, want one ErrLost", f.lost)
	}
	// Nothing held: not held, and no loss.
	if err := f.tracker.Release(t.Context(), hold.Exclusive); !errors.Is(err, errs.ErrNotHeld) || len(f.lost) != 1 {
		t.Fatalf("Release of nothing = %v (losses %d)", err, len(f.lost))
	}
}

// An attempt whose outcome is unknown is given back by its id; one that
// failed with an error reply took nothing and is not.
func TestAttemptUndo(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail fakeFail
		undo bool
	}{
		{"reply lost after the script ran", fakeFail{run: true, err: errLostReply}, true},
		{"lost before it ran", fakeFail{err: errLostReply}, true},
		{"error reply", fakeFail{err: replyErr("ERR boom")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			ok, err := f.acquire(t.Context(), hold.Exclusive, tc.fail)
			if ok || err == nil {
				t.Fatalf("attempt = %v, %v; want the failure", ok, err)
			}
			if undone := len(f.calls) == 1; undone != tc.undo {
				t.Fatalf("undo ran: %v, want %v", undone, tc.undo)
			}
			if n := f.held(hold.Exclusive); n != 0 || f.tracker.Held(hold.Exclusive) {
				t.Fatalf("Redis holds %d levels, the tracker %v; want none", n, f.tracker.Held(hold.Exclusive))
			}
		})
	}
}

func TestAttemptRefused(t *testing.T) {
	f := newFake(t)
	refusal := errors.New("refused")
	ok, _, err := f.tracker.Attempt(t.Context(), hold.Exclusive, func(context.Context, string, uint64) (hold.Grant, error) {
		return hold.Grant{Refused: refusal}, nil
	})
	if ok || !errors.Is(err, refusal) || len(f.calls) != 0 {
		t.Fatalf("refused attempt = %v, %v after %d undo runs; want the refusal and no undo", ok, err, len(f.calls))
	}
}

// Both modes make one hold: it ends only when neither is held.
func TestModesShareOneHold(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	done := f.tracker.Done()
	f.mustAcquire(t, hold.Shared)
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
	if redistest.Closed(done) || !f.tracker.Held(hold.Shared) {
		t.Fatal("the hold ended while a shared level was left")
	}
	if err := f.tracker.Release(t.Context(), hold.Shared); err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(done) {
		t.Fatal("Done open with nothing held")
	}
}

// A grant that arrives after its lease could have run out on the server is
// given back, not reported: someone else may hold the lock by then.
func TestLateGrantIsGivenBack(t *testing.T) {
	_, rdb := redistest.Mini(t)
	f := &fake{}
	f.tracker = hold.New(hold.Config{RDB: rdb, Lease: 100 * time.Millisecond, Release: f.release})
	t.Cleanup(f.tracker.Drop)
	ok, _, err := f.tracker.Attempt(t.Context(), hold.Exclusive, func(context.Context, string, uint64) (hold.Grant, error) {
		f.mu.Lock()
		f.levels[hold.Exclusive]++
		levels := f.levels
		f.mu.Unlock()
		time.Sleep(120 * time.Millisecond) // the reply is slower than the lease
		return hold.Grant{OK: true, Levels: levels}, nil
	})
	if ok || err != nil {
		t.Fatalf("Attempt with a late grant = %v, %v; want a refusal to retry", ok, err)
	}
	if n := f.held(hold.Exclusive); n != 0 {
		t.Fatalf("late grant kept: %d levels held", n)
	}
	if !redistest.Closed(f.tracker.Done()) {
		t.Fatal("a hold was recorded for a late grant")
	}
}

// A hold whose lease ends at once (a fixed lease shorter than the time it
// took to record it) is still reported lost: Done closes.
func TestImmediateLossClosesDone(t *testing.T) {
	_, rdb := redistest.Mini(t)
	f := &fake{}
	f.tracker = hold.New(hold.Config{RDB: rdb, Lease: 30 * time.Millisecond, Release: f.release})
	t.Cleanup(f.tracker.Drop)
	for range 20 {
		if ok, err := f.acquire(t.Context(), hold.Exclusive, fakeFail{}); !ok || err != nil {
			t.Fatalf("acquire = %v, %v", ok, err)
		}
		select {
		case <-f.tracker.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("Done of a hold whose 30ms lease ran out did not close")
		}
		f.mu.Lock()
		f.levels = hold.Levels{}
		f.mu.Unlock()
	}
}

// TestUndoOwed: a give-back that fails is sent again before the handle's
// next attempt, which would otherwise find the level it should have given
// back and adopt it, here in the other mode, where no Unlock releases it.
func TestUndoOwed(t *testing.T) {
	f := newFake(t)
	f.failNext(fakeFail{err: errLostReply}) // the give-back never runs
	if ok, err := f.acquire(t.Context(), hold.Exclusive, fakeFail{run: true, err: errLostReply}); ok || err == nil {
		t.Fatalf("attempt = %v, %v; want the lost reply", ok, err)
	}
	if n := f.held(hold.Exclusive); n != 1 {
		t.Fatalf("Redis holds %d levels after the failed give-back, want the attempt's 1", n)
	}

	// The give-back fails again: the attempt does not run.
	f.failNext(fakeFail{err: errLostReply})
	if ok, err := f.acquire(t.Context(), hold.Shared, fakeFail{}); ok || !errors.Is(err, errLostReply) {
		t.Fatalf("attempt while the give-back fails = %v, %v; want its failure", ok, err)
	}
	if n := f.held(hold.Shared); n != 0 {
		t.Fatalf("the attempt ran (%d read levels) while a give-back was owed", n)
	}

	f.mustAcquire(t, hold.Shared)
	if x, s := f.held(hold.Exclusive), f.held(hold.Shared); x != 0 || s != 1 ||
		f.tracker.Held(hold.Exclusive) || !f.tracker.Held(hold.Shared) {
		t.Fatalf("Redis holds %d write and %d read levels, the tracker %v and %v; want 0 and 1, false and true",
			x, s, f.tracker.Held(hold.Exclusive), f.tracker.Held(hold.Shared))
	}
	if want := []int64{1, 1, 1}; !slices.Equal(f.calls, want) {
		t.Fatalf("give-backs expected %v, want %v (the first, then sent again twice)", f.calls, want)
	}
}

// TestOwedGiveBackOnCallersTime: a give-back sent again before an attempt
// runs on the attempt's ctx. Bounded by a timeout of its own, a resend
// that waits for a connection fails with context.DeadlineExceeded while
// the caller's ctx runs on: wait.Waiter.Wait takes that for the end of the
// wait (it is not transient), and Lock fails with a deadline its caller
// never set.
func TestOwedGiveBackOnCallersTime(t *testing.T) {
	f := newFake(t)
	f.failNext(fakeFail{err: errLostReply}) // the give-back never runs
	if ok, err := f.acquire(t.Context(), hold.Exclusive, fakeFail{run: true, err: errLostReply}); ok || err == nil {
		t.Fatalf("attempt = %v, %v; want the lost reply", ok, err)
	}

	f.failNext(fakeFail{wait: true}) // the resend waits for a connection
	ctx, cancel := context.WithTimeout(t.Context(), hold.CleanupTimeout+500*time.Millisecond)
	defer cancel()
	ok, err := f.acquire(ctx, hold.Shared, fakeFail{})
	if ok || err == nil {
		t.Fatalf("attempt while the give-back waits = %v, %v; want an error", ok, err)
	}
	if errors.Is(err, context.DeadlineExceeded) && errs.CtxDone(ctx) == nil {
		t.Fatalf("attempt = %v with the caller's ctx still live: a wait would end on a deadline nobody set", err)
	}
}

// TestReleaseRepaysOwedGiveBack: an Unlock sends the owed give-backs
// first. A re-entry whose reply and give-back were lost left a level in
// Redis that the handle does not count; the Unlock of the handle's last
// level, finding one level more than it expects, would take the mismatch
// for its own earlier run, end the hold, and leave the lock held in Redis
// with nobody to release it until its lease runs out.
func TestReleaseRepaysOwedGiveBack(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	f.failNext(fakeFail{err: errLostReply}) // the give-back never runs
	if ok, err := f.acquire(t.Context(), hold.Exclusive, fakeFail{run: true, err: errLostReply}); ok || err == nil {
		t.Fatalf("re-entry = %v, %v; want the lost reply", ok, err)
	}
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
	if !redistest.Closed(f.tracker.Done()) {
		t.Fatal("the hold lives on after the release of its only level")
	}
	if n := f.held(hold.Exclusive); n != 0 {
		t.Fatalf("Redis holds %d levels after the handle released its only one", n)
	}
}

// TestGiveBackHandsOver: a give-back that grants the lock to a waiter of
// the process hands it over at once, as a release does, rather than
// leaving that waiter to the grant's message.
func TestGiveBackHandsOver(t *testing.T) {
	_, rdb := redistest.Mini(t)
	type handed struct {
		grantee string
		g       script.Grant
	}
	got := make(chan handed, 1)
	tr := hold.New(hold.Config{
		RDB:   rdb,
		Lease: time.Minute,
		Release: func(_ context.Context, _ hold.Mode, undoes string, _ uint64, _ bool) (hold.Released, error) {
			return hold.Released{Grantee: "next:1", Grant: script.Grant{ID: "next:1", Seq: 4, Token: uint64(len(undoes))}}, nil
		},
		Granted: func(grantee string, g script.Grant, _ time.Time) { got <- handed{grantee, g} },
	})
	t.Cleanup(tr.Drop)
	tr.Undo(t.Context(), hold.Exclusive, "o:7")
	select {
	case h := <-got:
		if h.grantee != "next:1" || h.g.ID != "next:1" || h.g.Token != 3 {
			t.Fatalf("handed %+v, want the grant to next:1 with token 3", h)
		}
	default:
		t.Fatal("the give-back's grant was not handed over")
	}
}

// TestGiveBackAfterCtxEnded: an attempt whose outcome is unknown when its
// ctx ends returns at once; its give-back, which Redis is slow to answer,
// finishes in the background, and the handle's next attempt waits for it
// before its own script runs.
func TestGiveBackAfterCtxEnded(t *testing.T) {
	f := newFake(t)
	slow := make(chan struct{})
	f.failNext(fakeFail{block: slow}) // the give-back
	ctx, cancel := context.WithCancel(t.Context())
	start := time.Now()
	ok, _, err := f.tracker.Attempt(ctx, hold.Exclusive, func(context.Context, string, uint64) (hold.Grant, error) {
		f.mu.Lock()
		f.levels[hold.Exclusive]++ // it ran, and ctx ended before its reply
		f.mu.Unlock()
		cancel()
		return hold.Grant{}, errLostReply
	})
	if ok || !errors.Is(err, context.Canceled) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("attempt = %v, %v after %v; want the ctx error at once", ok, err, time.Since(start))
	}
	next := make(chan error, 1)
	ran := make(chan struct{})
	go func() {
		_, _, err := f.tracker.Attempt(t.Context(), hold.Exclusive, func(context.Context, string, uint64) (hold.Grant, error) {
			close(ran)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.levels[hold.Exclusive]++
			return hold.Grant{OK: true, Levels: f.levels}, nil
		})
		next <- err
	}()
	select {
	case <-ran:
		t.Fatal("the next attempt ran while the give-back was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(slow)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if n := f.held(hold.Exclusive); n != 1 || !f.tracker.Held(hold.Exclusive) {
		t.Fatalf("Redis holds %d levels, the handle %v; want 1 and true", n, f.tracker.Held(hold.Exclusive))
	}
	if err := f.tracker.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
}

// recordingTracker returns a Tracker of owner "o" whose release script is
// release, which records what it was asked.
func recordingTracker(t *testing.T, release func(m hold.Mode, id string, tag uint64, giveBack bool) hold.Released) *hold.Tracker {
	_, rdb := redistest.Mini(t)
	tr := hold.New(hold.Config{
		RDB:   rdb,
		Lease: time.Minute,
		Owner: "o",
		Release: func(_ context.Context, m hold.Mode, id string, tag uint64, giveBack bool) (hold.Released, error) {
			return release(m, id, tag, giveBack), nil
		},
	})
	t.Cleanup(tr.Drop)
	return tr
}

// TestHoldIDs: every attempt for a new hold names the handle's wait id,
// "<owner>:<n>"; the hold takes it, and once the hold ends, or anything is
// given back under an id, the next attempt names a new one, so that a
// release or give-back that Redis runs late never meets a later hold
// (see TestLateUnlockSameHandle in internal/faulttest). A clean refusal
// keeps the id: nothing was left under it.
func TestHoldIDs(t *testing.T) {
	type named struct {
		id       string
		giveBack bool
	}
	var got []named
	tr := recordingTracker(t, func(_ hold.Mode, id string, _ uint64, giveBack bool) hold.Released {
		got = append(got, named{id, giveBack})
		return hold.Released{}
	})
	var ids []string
	attempt := func(ok bool, err error) {
		t.Helper()
		_, _, _ = tr.Attempt(t.Context(), hold.Exclusive, func(_ context.Context, id string, _ uint64) (hold.Grant, error) {
			ids = append(ids, id)
			return hold.Grant{OK: ok, Levels: hold.Levels{hold.Exclusive: 1}}, err
		})
	}
	attempt(false, nil) // o:1 refused: kept
	attempt(true, nil)  // o:1 takes the hold
	if err := tr.Release(t.Context(), hold.Exclusive); err != nil {
		t.Fatal(err)
	}
	attempt(false, errLostReply) // o:2, outcome unknown: given back, retired
	attempt(true, nil)           // o:3
	tr.Drop()
	if want := []string{"o:1", "o:1", "o:2", "o:3"}; !slices.Equal(ids, want) {
		t.Fatalf("the attempts named %v; want %v", ids, want)
	}
	if want := []named{{"o:1", false}, {"o:2", true}}; !slices.Equal(got, want) {
		t.Fatalf("the release scripts named %v; want %v", got, want)
	}
}

// A release is sent for the hold its level is part of: once that hold has
// ended (lost, or force-unlocked, and given up by the handle) and the
// handle holds another, a release of the first changes nothing in Redis
// and reports ErrNotHeld, instead of releasing the later hold (the Unlock
// of a goroutine that found its hold before the loss, run after another
// goroutine of the handle took the lock again).
func TestReleaseIsForItsOwnHold(t *testing.T) {
	f := newFake(t)
	f.mustAcquire(t, hold.Exclusive)
	first := f.tracker.Current()
	f.tracker.Drop()
	f.mu.Lock()
	f.levels = hold.Levels{} // force-unlocked
	f.mu.Unlock()
	f.mustAcquire(t, hold.Exclusive)
	err := f.tracker.ReleaseOf(t.Context(), first, hold.Exclusive)
	if !errors.Is(err, errs.ErrNotHeld) {
		t.Fatalf("release of an ended hold = %v; want ErrNotHeld", err)
	}
	if len(f.calls) != 0 || f.held(hold.Exclusive) != 1 || !f.tracker.Held(hold.Exclusive) {
		t.Fatalf("release of an ended hold sent %v, left %d levels in Redis, held %v; want nothing sent, 1, true",
			f.calls, f.held(hold.Exclusive), f.tracker.Held(hold.Exclusive))
	}
}

// TestReadLevelTags: a read level is named to its release, and to the
// give-back of an attempt whose outcome is unknown, by the number of the
// attempt that took it (Asking.Seq), so that a hold that takes its read
// level again (a downgrade, released, then taken again) has a new name
// for it; a write level names none.
func TestReadLevelTags(t *testing.T) {
	type named struct {
		m        hold.Mode
		tag      uint64
		giveBack bool
	}
	var mu sync.Mutex
	var got []named
	tr := recordingTracker(t, func(m hold.Mode, _ string, tag uint64, giveBack bool) hold.Released {
		mu.Lock()
		got = append(got, named{m, tag, giveBack})
		mu.Unlock()
		return hold.Released{Levels: hold.Levels{hold.Exclusive: 1}}
	})
	var seqs []uint64
	attempt := func(m hold.Mode, levels hold.Levels, err error) {
		t.Helper()
		_, _, _ = tr.Attempt(t.Context(), m, func(_ context.Context, _ string, seq uint64) (hold.Grant, error) {
			seqs = append(seqs, seq)
			return hold.Grant{OK: true, Levels: levels}, err
		})
	}
	both := hold.Levels{hold.Exclusive: 1, hold.Shared: 1}
	attempt(hold.Exclusive, hold.Levels{hold.Exclusive: 1}, nil)
	attempt(hold.Shared, both, nil) // a downgrade
	if err := tr.Release(t.Context(), hold.Shared); err != nil {
		t.Fatal(err)
	}
	attempt(hold.Shared, both, errLostReply) // given back
	attempt(hold.Shared, both, nil)          // taken again
	if err := tr.Release(t.Context(), hold.Shared); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) != 4 || !slices.IsSorted(seqs) || seqs[0] == seqs[1] || seqs[2] == seqs[3] {
		t.Fatalf("attempt numbers %v, want 4 increasing", seqs)
	}
	want := []named{{hold.Shared, seqs[1], false}, {hold.Shared, seqs[2], true}, {hold.Shared, seqs[3], false}}
	if !slices.Equal(got, want) {
		t.Fatalf("the release scripts named %v; want %v", got, want)
	}
}
