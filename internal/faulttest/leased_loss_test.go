package faulttest_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// lostPermit is a permit the watchdog kept alive (lease 0) and gave up,
// its renewals failing until its lease ran out here, while a slow server
// clock keeps it on the server for a minute: its release is owed.
type lostPermit struct {
	s      *semaphore.Leased
	id     string
	admin  *redis.Client
	leases string // the semaphore's zset of permits
	faults *clientFaults
}

// losePermit makes a lostPermit of the one permit of a new semaphore;
// arm, if set, runs on the faults once the permit is taken, before the
// loss.
func losePermit(t *testing.T, arm func(*clientFaults)) *lostPermit {
	t.Helper()
	srv := redistest.SharedServer(t)
	p := &lostPermit{admin: srv.NewClient(t)}
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	p.faults = addClientFaults(rdb)
	ctx := t.Context()
	p.s = semaphore.NewLeased(rdb, name, semaphore.WithWatchdogTimeout(lease41))
	if err := p.s.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var err error
	if p.id, err = p.s.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// A slow server clock: the permit's lease on the server ends a minute
	// from now.
	p.leases = keyspace.NewNames(name).Lock()
	until := float64(time.Now().Add(time.Minute).UnixMilli())
	if err := p.admin.ZAddXX(ctx, p.leases, redis.Z{Score: until, Member: p.id}).Err(); err != nil {
		t.Fatal(err)
	}
	if arm != nil {
		arm(p.faults)
	}
	if !p.faults.holdRenewals(lease41) {
		t.Fatal("no renewal failed: the fault was not injected")
	}
	redistest.WaitFor(t, 5*lease41, func() bool { return isClosed(p.s.Done(p.id)) })
	p.faults.failPipes.Store(false)
	return p
}

// stands reports whether the permit is in Redis.
func (p *lostPermit) stands(t *testing.T) bool {
	t.Helper()
	err := p.admin.ZScore(t.Context(), p.leases, p.id).Err()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return err == nil
}

// A permit the watchdog keeps alive (lease 0) that it gives up, its
// renewals failing until its lease ran out here, is owed: the server's
// clock may run slow, and the permit stand past the lease its holder
// counted on. Its release was owed by the permit's Tracker, which sends
// what it owes before its next script, or with a renewal of its hold; but
// the loss took the permit out of the handle's map, and nothing called
// that Tracker again: the owed release was never sent. The handle owns
// the debt now, and sends it.
func TestLeasedLossSendsOwedRelease(t *testing.T) {
	p := losePermit(t, nil)
	ctx := t.Context()
	if !waitUntil(3*lease41, func() bool { n, err := p.s.Available(ctx); return err == nil && n == 1 }) {
		t.Errorf("the permit the watchdog gave up still stands (leases %v)", p.admin.ZRangeWithScores(ctx, p.leases, 0, -1).Val())
	}
}

// A Renew of a lost permit while its owed release is in flight waits for
// that release: the renewal runs after it, finds no permit and reports
// false. A renewal sent meanwhile could run first and report true for a
// permit that the owed release then frees.
func TestLeasedRenewWaitsForOwedRelease(t *testing.T) {
	var owed *scriptGate
	p := losePermit(t, func(f *clientFaults) { owed = f.holdNextScript() })
	owed.mustCatch(t, "the owed release")
	renewal := p.faults.holdNextReply()
	type result struct {
		ok  bool
		err error
	}
	renewed := make(chan result, 1)
	go func() {
		ok, err := p.s.Renew(t.Context(), p.id, 0)
		renewed <- result{ok, err}
	}()
	// The renewal must not reach Redis while the release is held: a wait
	// for something that must not happen is bounded by a guess.
	select {
	case <-renewal.caught:
		t.Error("the renewal was sent while the owed release was in flight")
	case <-time.After(300 * time.Millisecond):
	}
	p.faults.let(owed)
	renewal.mustCatch(t, "the renewal")
	p.faults.let(renewal)
	r := <-renewed
	if r.err != nil || r.ok {
		t.Fatalf("Renew of a permit released by its owed release = %v, %v; want false", r.ok, r.err)
	}
	if p.stands(t) {
		t.Error("the permit stands after its owed release")
	}
}

// A Renew of a lost permit whose owed release failed forgives the debt:
// the permit is the caller's again, kept alive by the watchdog, and
// neither the handle's next call nor a renewal frees it.
func TestLeasedRenewForgivesOwedRelease(t *testing.T) {
	var owed *scriptGate
	p := losePermit(t, func(f *clientFaults) { owed = f.holdNextScript() })
	owed.mustCatch(t, "the owed release")
	// Held past its own timeout, the owed release fails and stays owed.
	time.Sleep(hold.CleanupTimeout + 200*time.Millisecond) // fault injection: the send's timeout
	p.faults.let(owed)
	ctx := t.Context()
	ok, err := p.s.Renew(ctx, p.id, 0)
	if err != nil || !ok {
		t.Fatalf("Renew of a lost permit that stands = %v, %v; want true", ok, err)
	}
	// The handle's next call, and the renewals of a watchdog timeout.
	if _, ok, err := p.s.TryAcquire(ctx, time.Minute); err != nil || ok {
		t.Fatalf("TryAcquire with the renewed permit taken = %v, %v; want false", ok, err)
	}
	time.Sleep(lease41) // the watchdog's renewals, three of them
	if isClosed(p.s.Done(p.id)) || !p.stands(t) {
		t.Fatalf("the renewed permit was freed (Done closed: %v)", isClosed(p.s.Done(p.id)))
	}
	if err := p.s.Release(ctx, p.id); err != nil {
		t.Fatalf("Release of the renewed permit: %v", err)
	}
}
