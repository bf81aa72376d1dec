package hold

import (
	"context"
	"testing"
	"time"

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
// the attempt that follows (after the release) completes it.
func TestClaimOfLateTransfer(t *testing.T) {
	_, rdb := redistest.Mini(t)
	tk := New(Config{RDB: rdb, Lease: time.Minute})
	now := time.Now()
	tr := &Transfer{To: "w", Mark: "1", at: now, lease: GrantLease, valid: now.Add(-time.Millisecond), done: make(chan struct{})}
	go tr.finish(true)
	ok, err := tk.ClaimTransfer(context.Background(), Exclusive, tr, 1)
	if ok || err != nil || tk.Held(Exclusive) != 0 {
		t.Fatalf("ClaimTransfer past the releaser's validity = %v, %v (holding %d); want false, nil, nothing held", ok, err, tk.Held(Exclusive))
	}
}
