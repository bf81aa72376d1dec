package perclient_test

import (
	"github.com/redisync/redisync/internal/perclient"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/redistest"
)

// kicked waits up to within for the keeper to tell kp's waiter to attempt.
func kicked(kp *perclient.Kept, within time.Duration) bool {
	select {
	case <-kp.C():
		return true
	default:
	}
	if within <= 0 {
		return false
	}
	select {
	case <-kp.C():
		return true
	case <-time.After(within):
		return false
	}
}

// The keeper keeps a parked waiter's place alive past its TTL, records
// when it last found it, and tells the waiter to attempt when the place
// is gone (a grant took it) or the lock is free; after Stop the place
// lapses.
func TestKeeperKeepsPlace(t *testing.T) {
	redistest.Long(t)
	rdb := redistest.SharedServer(t).NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	lock, place := "{"+name+"}", "{"+name+"}:place"
	const ttl = 2500 * time.Millisecond
	rdb.HSet(ctx, lock, "holder", 1)
	rdb.PExpire(ctx, lock, time.Minute)
	rdb.Set(ctx, place, "1", ttl)

	c := perclient.Attach(rdb)
	defer c.Detach()
	kp := c.Keep(perclient.Place{Key: place, TTL: ttl, Lock: lock})
	kp.Expect("1")
	stopped := false
	defer func() {
		if !stopped {
			kp.Stop()
		}
	}()
	if !kp.Base().IsZero() {
		t.Fatal("Base before any refresh")
	}
	time.Sleep(ttl + 500*time.Millisecond) // past the place's TTL: it lives only if refreshed
	if n := rdb.Exists(ctx, place).Val(); n != 1 {
		t.Fatal("the kept place lapsed")
	}
	if b := kp.Base(); b.IsZero() || time.Since(b) > 2*time.Second {
		t.Fatalf("Base = %v, want a refresh within the last period or so", b)
	}
	if kicked(kp, 0) {
		t.Fatal("told to attempt with its place kept and the lock held")
	}

	rdb.Del(ctx, place) // a release granted the lock, taking the place
	if !kicked(kp, 3*time.Second) {
		t.Fatal("not told to attempt when its place was gone")
	}
	// An earlier attempt of the waiter's, run late, sets the place again
	// with its own value: the place is kept, but no refresh stands for
	// the last attempt any more (a grant to it may have taken its place).
	before := kp.Base()
	rdb.Set(ctx, place, "0", ttl)
	kicked(kp, 0)                          // a kick from a round before the SET, if any
	time.Sleep(ttl + 500*time.Millisecond) // rounds that find the old value, past its TTL
	if n := rdb.Exists(ctx, place).Val(); n != 1 {
		t.Fatal("the place with an earlier attempt's value lapsed")
	}
	if b := kp.Base(); !b.Equal(before) {
		t.Fatalf("Base moved from %v to %v on a place holding an earlier attempt's value", before, b)
	}
	if kicked(kp, 0) {
		t.Fatal("told to attempt with a place and the lock held")
	}
	rdb.Set(ctx, place, "2", ttl) // the next attempt refused, the place set again
	kp.Expect("2")
	rdb.Del(ctx, lock) // the holder's lease ran out
	if !kicked(kp, 3*time.Second) {
		t.Fatal("not told to attempt when the lock was free")
	}

	kp.Stop()
	stopped = true
	redistest.WaitFor(t, 3*ttl, func() bool { return rdb.Exists(ctx, place).Val() == 0 })
}

// A lock whose lease runs out within the period (a grant to a dead
// waiter, say) is looked at again just after, not a period later.
func TestKeeperLooksAtShortLease(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	lock, place := "{"+name+"}", "{"+name+"}:place"
	rdb.Set(ctx, place, "1", 5*time.Second)
	rdb.HSet(ctx, lock, "grantee", 1)
	rdb.PExpire(ctx, lock, 1200*time.Millisecond) // seen at the first look, about 200ms left
	c := perclient.Attach(rdb)
	defer c.Detach()
	start := time.Now()
	kp := c.Keep(perclient.Place{Key: place, TTL: 5 * time.Second, Lock: lock})
	defer kp.Stop()
	if !kicked(kp, 5*time.Second) {
		t.Fatal("not told to attempt when the lock's lease ran out")
	}
	// Two periods would be 2s; the early look comes just after 1.2s.
	if d := time.Since(start); d > 1900*time.Millisecond {
		t.Fatalf("told %v after the lease was set to run out at 1.2s; want well before the second period", d)
	}
}

// The keeper keeps a parked waiter's place that is a member of a sorted
// set (an rwlock waiter's announcement): the member's score, when it
// lapses on the server's clock, and the set's expiry move ahead each
// round; a member that left is not brought back, and its waiter is told
// to attempt.
func TestKeeperKeepsMember(t *testing.T) {
	redistest.Long(t)
	rdb := redistest.SharedServer(t).NewClient(t)
	ctx := t.Context()
	name := redistest.UniqueName(t)
	lock, set := "{"+name+"}", "{"+name+"}:announced"
	const ttl = 2 * time.Second
	rdb.HSet(ctx, lock, "holder", 1)
	rdb.PExpire(ctx, lock, time.Minute)
	lapse := func() float64 { return float64(rdb.Time(ctx).Val().Add(ttl).UnixMilli()) }
	rdb.ZAdd(ctx, set, redis.Z{Score: lapse(), Member: "a"}, redis.Z{Score: lapse(), Member: "b"})
	rdb.PExpire(ctx, set, ttl)

	c := perclient.Attach(rdb)
	defer c.Detach()
	a := c.Keep(perclient.Place{Key: set, Member: "a", TTL: ttl, Lock: lock})
	defer a.Stop()
	time.Sleep(ttl + 500*time.Millisecond) // past the member's lapse: it lives only if refreshed
	now := float64(rdb.Time(ctx).Val().UnixMilli())
	if score, err := rdb.ZScore(ctx, set, "a").Result(); err != nil || score <= now {
		t.Fatalf("the kept member lapses at %v (%v), server time %v: not refreshed", score, err, now)
	}
	if score := rdb.ZScore(ctx, set, "b").Val(); score > now {
		t.Fatalf("the member nobody keeps lapses at %v, server time %v: refreshed", score, now)
	}
	if d := rdb.PTTL(ctx, set).Val(); d <= 0 { // it would have expired by now
		t.Fatalf("the set's expiry is %v away: not moved with its member", d)
	}
	if kicked(a, 0) {
		t.Fatal("told to attempt with its member kept and the lock held")
	}

	rdb.ZRem(ctx, set, "a") // the waiter came in, or withdrew
	if !kicked(a, 3*time.Second) {
		t.Fatal("not told to attempt when its member was gone")
	}
	kicked(a, 3*time.Second) // one more round, which must not add it back
	if err := rdb.ZScore(ctx, set, "a").Err(); err != redis.Nil {
		t.Fatalf("ZSCORE of the member that left = %v: brought back", err)
	}
}

// A member's score is a time on the server's clock, however far ours is
// from it.
func TestKeeperScoresOnServerClock(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	ctx := t.Context()
	server := time.Now().Add(time.Hour) // the server's clock is an hour ahead
	mr.SetTime(server)
	const ttl = 2 * time.Second
	rdb.ZAdd(ctx, "{n}:announced", redis.Z{Score: 1, Member: "a"})
	c := perclient.Attach(rdb)
	defer c.Detach()
	kp := c.Keep(perclient.Place{Key: "{n}:announced", Member: "a", TTL: ttl, Lock: "{n}"})
	defer kp.Stop()
	// The lock is free, so every round tells the waiter to attempt.
	if !kicked(kp, 3*time.Second) {
		t.Fatal("no round ran")
	}
	score := rdb.ZScore(ctx, "{n}:announced", "a").Val()
	want := float64(server.Add(ttl).UnixMilli())
	if score < want-5000 || score > want+5000 {
		t.Fatalf("score %v, want the server's time plus the TTL, about %v (%v off)", score, want, time.Duration(score-want)*time.Millisecond)
	}
}
