package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/watchdog"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// pexpire is a renewal that extends key if it exists.
func pexpire(key string, lease time.Duration) func(context.Context, redis.Scripter) func() (bool, error) {
	script := redis.NewScript(`return redis.call('pexpire', KEYS[1], ARGV[1])`)
	return func(ctx context.Context, s redis.Scripter) func() (bool, error) {
		cmd := script.Run(ctx, s, []string{key}, lease.Milliseconds())
		return func() (bool, error) {
			n, err := cmd.Int64()
			return n == 1, err
		}
	}
}

func TestBatchedRenewals(t *testing.T) {
	redistest.Long(t)
	// A real server: miniredis runs each script in a fresh Lua state, too
	// slowly for 2500 renewals per period.
	rdb := redistest.SharedServer(t).NewClient(t)
	count := redistest.CountTraffic(rdb)
	w := watchdog.New(rdb)
	const holds, lease = 2500, 600 * time.Millisecond
	var hs []*watchdog.Hold
	var lost atomic.Int32
	base := redistest.UniqueName(t)
	for i := range holds {
		key := base + ":" + strconv.Itoa(i)
		rdb.Set(t.Context(), key, 1, lease)
		hs = append(hs, w.Add(watchdog.Entry{Renew: pexpire(key, lease), Lease: lease, Lost: func(error) { lost.Add(1) }}, time.Now()))
	}
	// The server forgets its scripts (as after a restart): the first batch
	// reloads the script once instead of falling back hold by hold.
	rdb.ScriptFlush(t.Context())
	pipes0, cmds0 := count.RoundTrips(), count.Commands()
	time.Sleep(3 * lease) // nine renewal periods
	pipes, cmds := count.RoundTrips()-pipes0, count.Commands()-cmds0
	for _, h := range hs {
		h.Remove()
	}
	for i := range holds {
		rdb.Del(t.Context(), base+":"+strconv.Itoa(i))
	}
	if n := lost.Load(); n != 0 {
		t.Fatalf("%d holds lost while renewed", n)
	}
	// 2500 holds need 3 pipelines of at most 1000 per period: about 27
	// pipelines in nine periods; allow for late ticks on a busy machine.
	if cmds < holds*5 {
		t.Fatalf("%d renewals in 9 periods for %d holds: not renewed every period", cmds, holds)
	}
	if perPeriod := float64(pipes) / 9; perPeriod > 6 {
		t.Fatalf("%.1f round trips per renewal period for %d holds, want about 3 (batched)", perPeriod, holds)
	}
}

func TestGoneHoldIsLost(t *testing.T) {
	_, rdb := redistest.Mini(t)
	w := watchdog.New(rdb)
	lost := make(chan error, 2)
	lease := 300 * time.Millisecond
	rdb.Set(t.Context(), "k", 1, time.Minute)
	h := w.Add(watchdog.Entry{Renew: pexpire("k", lease), Lease: lease, Lost: func(err error) { lost <- err }}, time.Now())
	defer h.Remove()
	rdb.Del(t.Context(), "k")
	start := time.Now()
	select {
	case err := <-lost:
		if !errors.Is(err, watchdog.ErrGone) {
			t.Fatalf("Lost(%v), want ErrGone", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a hold whose key vanished was not reported lost")
	}
	if d := time.Since(start); d > 2*lease/3+100*time.Millisecond {
		t.Fatalf("loss reported after %v, want within one renewal period", d)
	}
	if w.Len() != 0 {
		t.Fatal("lost hold still registered")
	}
}

// A renewal that finds the hold gone may say why, with an error wrapping
// ErrGone: the loss carries it, and it is not taken for a failed renewal
// to try again.
func TestGoneHoldSaysWhy(t *testing.T) {
	_, rdb := redistest.Mini(t)
	w := watchdog.New(rdb)
	lost := make(chan error, 2)
	lease := 300 * time.Millisecond
	why := fmt.Errorf("%w: now held by someone else", watchdog.ErrGone)
	taken := func(context.Context, redis.Scripter) func() (bool, error) {
		return func() (bool, error) { return false, why }
	}
	h := w.Add(watchdog.Entry{Renew: taken, Lease: lease, Lost: func(err error) { lost <- err }}, time.Now())
	defer h.Remove()
	select {
	case err := <-lost:
		if err != why {
			t.Fatalf("Lost(%v), want %v", err, why)
		}
	case <-time.After(lease):
		t.Fatal("a hold found taken over was not reported lost before its lease ran out")
	}
}

// A renewal stuck in flight does not delay the loss: the hold expires at
// its locally computed validity.
func TestStuckRenewalExpires(t *testing.T) {
	_, rdb := redistest.Mini(t)
	w := watchdog.New(rdb)
	lease := 300 * time.Millisecond
	stuck := func(ctx context.Context, s redis.Scripter) func() (bool, error) {
		return func() (bool, error) {
			<-ctx.Done() // a renewal that never answers
			return false, ctx.Err()
		}
	}
	lost := make(chan error, 1)
	sent := time.Now()
	h := w.Add(watchdog.Entry{Renew: stuck, Lease: lease, Lost: func(err error) { lost <- err }}, sent)
	defer h.Remove()
	select {
	case err := <-lost:
		if !errors.Is(err, watchdog.ErrExpired) {
			t.Fatalf("Lost(%v), want ErrExpired", err)
		}
		if at := time.Since(sent); at > lease {
			t.Fatalf("loss reported %v after acquisition, after the %v lease had run out", at, lease)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a hold with a stuck renewal never expired")
	}
}

func TestFixedLeaseExpires(t *testing.T) {
	_, rdb := redistest.Mini(t)
	w := watchdog.New(rdb)
	lost := make(chan error, 1)
	sent := time.Now()
	h := w.Add(watchdog.Entry{Lease: 200 * time.Millisecond, Lost: func(err error) { lost <- err }}, sent)
	defer h.Remove()
	h.Touch(sent.Add(100 * time.Millisecond)) // a re-entry re-arms the lease
	err := <-lost
	if d := time.Since(sent); d < 250*time.Millisecond {
		t.Fatalf("re-armed lease expired after %v, want about 300ms", d)
	}
	if !errors.Is(err, watchdog.ErrExpired) {
		t.Fatalf("Lost(%v), want ErrExpired", err)
	}
}

func TestNoGoroutineWhenIdle(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ignore := goleak.IgnoreCurrent()
	w := watchdog.New(rdb)
	h := w.Add(watchdog.Entry{Renew: pexpire("k", time.Second), Lease: time.Second, Lost: func(error) {}}, time.Now())
	h.Remove()
	redistest.VerifyNone(t, ignore)
}

// When the last hold expires the loop ends, even if Lost does not call
// Remove.
func TestLoopEndsAfterLastLoss(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ignore := goleak.IgnoreCurrent()
	w := watchdog.New(rdb)
	lost := make(chan error, 1)
	w.Add(watchdog.Entry{Lease: 100 * time.Millisecond, Lost: func(err error) { lost <- err }}, time.Now())
	<-lost
	redistest.VerifyNone(t, ignore)
}

// A hold added after the last one was removed is renewed: the timer the
// first hold armed and Remove stopped is armed again with Reset.
func TestHoldAfterRemoveIsRenewed(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	w := watchdog.New(rdb)
	const lease = 300 * time.Millisecond
	key := redistest.UniqueName(t)
	rdb.Set(t.Context(), key, 1, lease)
	lost := make(chan error, 2)
	first := w.Add(watchdog.Entry{Renew: pexpire(key, lease), Lease: lease, Lost: func(err error) { lost <- err }}, time.Now())
	first.Remove()
	time.Sleep(lease / 2) // past when the first hold's timer would have fired
	second := w.Add(watchdog.Entry{Renew: pexpire(key, lease), Lease: lease, Lost: func(err error) { lost <- err }}, time.Now())
	defer second.Remove()
	select {
	case err := <-lost:
		t.Fatalf("hold lost while its key exists: %v", err)
	case <-time.After(4 * lease):
	}
	if ttl := rdb.PTTL(t.Context(), key).Val(); ttl <= 0 {
		t.Fatalf("key expired (PTTL %v): the second hold was not renewed", ttl)
	}
}
