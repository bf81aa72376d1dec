package hold

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
)

// A transfer whose release is known to have failed before the waiter
// claims it is not claimed: the waiter attempts instead, and holds
// nothing meanwhile.
func TestClaimOfFailedTransfer(t *testing.T) {
	_, rdb := redistest.Mini(t)
	tk := New(Config{RDB: rdb, Lease: time.Minute})
	now := time.Now()
	tr := &Transfer{To: "w", Mark: "1", at: now, lease: GrantLease, valid: now.Add(10 * time.Second), done: make(chan struct{})}
	tr.finish(false)
	ok, err := tk.ClaimTransfer(context.Background(), Exclusive, tr, 1)
	if ok || err != nil {
		t.Fatalf("ClaimTransfer of a failed transfer = %v, %v; want false, nil", ok, err)
	}
	if tk.Held(Exclusive) != 0 {
		t.Fatal("the handle holds a level after claiming a failed transfer")
	}
}

// A local handoff (under the owners' lock) and the end of the same hold
// (the watchdog's loss, under the Tracker's lock, which then takes the
// owners' lock to forget the holds) never wait for each other.
func TestHandOverAndLossDoNotDeadlock(t *testing.T) {
	_, rdb := redistest.Mini(t)
	for range 2000 {
		tk := New(Config{RDB: rdb, Lease: time.Minute})
		l := &Lock{k: Kind{LocalHandoff: true}, t: tk}
		l.owners.init(1)
		tk.onLoss = l.owners.reset
		if !l.gate.TryAcquire(1) {
			t.Fatal("gate taken")
		}
		h := tk.begin(Levels{Exclusive: 1}, 0, time.Now(), time.Minute, nil)
		r := &record{mode: Exclusive, plain: true, gen: l.gen, depth: 1}
		l.x, l.queued = r, 1
		done := make(chan struct{}, 2)
		go func() { l.handOver(r, Exclusive, r.gen); done <- struct{}{} }()
		go func() { tk.end(h, internal.ErrLost); done <- struct{}{} }()
		for range 2 {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("a local handoff and a loss of the same hold deadlocked")
			}
		}
		tk.Drop()
	}
}

// A pass claimed when too little of its validity is left is not claimed:
// the attempt that follows (after the release) completes it. While the
// release is under way the releaser's validity caps the pass's; once it
// has passed the lock, the grant lease from the pass does.
func TestClaimOfLateTransfer(t *testing.T) {
	_, rdb := redistest.Mini(t)
	tk := New(Config{RDB: rdb, Lease: time.Minute})
	now := time.Now()
	for _, tc := range []struct {
		name string
		tr   *Transfer
	}{
		{"releaser's validity over", &Transfer{To: "w", Mark: "1", at: now, lease: GrantLease, valid: now.Add(-time.Millisecond)}},
		{"grant lease over", &Transfer{To: "w", Mark: "1", at: now.Add(-GrantLease), lease: GrantLease, valid: now.Add(time.Minute)}},
	} {
		tr := tc.tr
		tr.done = make(chan struct{})
		finished := make(chan struct{})
		go func() {
			// Before or after the claim looks. The first case's release
			// fails, so that its pass is refused whichever comes first
			// (a release that passed the lock before the claim looked
			// would lift the releaser's cap); the second's succeeds.
			tr.finish(tc.name != "releaser's validity over")
			close(finished)
		}()
		ok, err := tk.ClaimTransfer(context.Background(), Exclusive, tr, 1)
		<-finished
		if ok || err != nil || tk.Held(Exclusive) != 0 {
			t.Fatalf("%s: ClaimTransfer = %v, %v (holding %d); want false, nil, nothing held", tc.name, ok, err, tk.Held(Exclusive))
		}
	}
}

// A release that passes the lock to no waiter of the process, whether its
// run has ended or no waiter is parked to take it (one attempting, one
// refused but not parked in the hub yet), names the waiters of the
// client's other handles, in the order they waited, for the grant in
// Redis to pass over; the releasing handle's own wait is not among them.
func TestPickPassesOverWithoutTransfer(t *testing.T) {
	_, rdb := redistest.Mini(t)
	name := "pick-" + t.Name()
	mk := func() *Lock { return passableLock(t, rdb, name) }
	releaser, attempting, unparked := mk(), mk(), mk()
	releaser.offer(2) // a wait of the releasing handle (a goroutine of it)
	attempting.offer(0)
	unparked.offer(3)
	defer releaser.withdraw()
	defer attempting.withdraw()
	defer unparked.withdraw()
	want := []string{attempting.k.Owner, unparked.k.Owner}
	now := time.Now()
	for _, r := range []run{{}, {passes: 2, since: now}, {passes: maxPasses, since: now}, {passes: 1, since: now.Add(-time.Second)}} {
		tr, over := releaser.pick(now.Add(time.Minute), r)
		if tr != nil || !slices.Equal(over, want) {
			t.Errorf("pick with run %+v = %v, %v; want no transfer, passing over %v", r, tr, over, want)
		}
	}
}

// A release whose hold is valid for too short a time makes no transfer,
// even to a waiter parked to take it: the grantee's hold would be valid no
// longer than the releaser's. It names that waiter for the grant in Redis
// to pass over instead, and the waiter's wait hears of nothing. Valid for
// long enough, the same release passes the lock to it.
func TestPickWithHoldTooShort(t *testing.T) {
	_, rdb := redistest.Mini(t)
	name := "pick-" + t.Name()
	mk := func() *Lock { return passableLock(t, rdb, name) }
	releaser, parked := mk(), mk()
	c := internal.Attach(rdb)
	defer c.Detach()
	sub, err := c.Hub.Subscribe(t.Context(), parked.k.Channel(Exclusive))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sub.Parked(time.Now().Add(-time.Second))
	parked.offer(7)
	defer parked.withdraw()

	lease := min(GrantLease, parked.t.cfg.Lease)
	tr, over := releaser.pick(time.Now().Add(lease/8), run{})
	if tr != nil {
		tr.finish(false) // withdraw waits for the release that carries tr
	}
	if tr != nil || !slices.Equal(over, []string{parked.k.Owner}) {
		t.Fatalf("pick of a hold valid for %v = %v, %v; want no transfer, passing over the parked waiter", lease/8, tr, over)
	}
	select {
	case <-sub.C():
		t.Fatal("a pick that made no transfer woke the parked waiter")
	default:
	}
	if _, granted := sub.Granted(); granted {
		t.Fatal("the parked waiter was granted the lock by a pick that made no transfer")
	}

	tr, over = releaser.pick(time.Now().Add(time.Minute), run{})
	if tr != nil {
		tr.finish(false)
	}
	if tr == nil || tr.To != parked.k.Owner || over != nil {
		t.Fatalf("pick of a hold valid for a minute = %v, %v; want a transfer to the parked waiter", tr, over)
	}
	select {
	case <-sub.C():
	default:
		t.Fatal("the transfer did not wake the parked waiter")
	}
	if g, granted := sub.Granted(); !granted || g.Mark != 7 {
		t.Fatalf("the parked waiter's grant = %+v, %v; want the mark of its last refused attempt, 7", g, granted)
	}
}

// passableLock returns a handle on the lock called name whose waits and
// releases take part in transfers (passable), for tests that call offer
// and pick themselves: its release script is never run.
func passableLock(t *testing.T, rdb redis.UniversalClient, name string) *Lock {
	tk := New(Config{RDB: rdb, Lease: time.Minute})
	t.Cleanup(tk.Drop)
	b := NewBase("rlock", rdb, name)
	channel := func(Mode) string { return b.Keys.WaiterChannel(b.Owner) }
	releaseTo := func(context.Context, int64, uint64, *Transfer, []string) (Released, error) {
		t.Error("the release script ran")
		return Released{}, nil
	}
	l := &Lock{k: Kind{Base: b, Grants: true, LocalHandoff: true, Channel: channel, ReleaseTo: releaseTo}, t: tk}
	if !l.passable(Exclusive) {
		t.Fatal("passableLock's handle does not take part in transfers")
	}
	return l
}
