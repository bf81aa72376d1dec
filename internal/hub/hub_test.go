package hub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// woken counts the subscriptions that hold a wake-up, draining them.
func woken(subs []*hub.Subscription) int {
	n := 0
	for _, s := range subs {
		select {
		case <-s.C():
			n++
		default:
		}
	}
	return n
}

// settle waits until want subscriptions hold a wake-up, then checks that no
// more arrive for a moment: wake-ups must match the message, not the herd.
func settle(t *testing.T, subs []*hub.Subscription, want int) {
	t.Helper()
	got := 0
	redistest.WaitFor(t, 2*time.Second, func() bool { got += woken(subs); return got >= want })
	time.Sleep(50 * time.Millisecond) // a surplus wake-up would arrive within this
	if got += woken(subs); got != want {
		t.Fatalf("%d waiters woken, want %d", got, want)
	}
}

func subscribeN(t *testing.T, h *hub.Hub, channel string, n int) []*hub.Subscription {
	t.Helper()
	var subs []*hub.Subscription
	for range n {
		s, err := h.Subscribe(t.Context(), channel)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	return subs
}

func TestWakeCounts(t *testing.T) {
	for _, tier := range []string{"miniredis", "redis-server"} {
		t.Run(tier, func(t *testing.T) {
			var rdb *redis.Client
			if tier == "miniredis" {
				_, rdb = redistest.Mini(t)
			} else {
				rdb = redistest.SharedServer(t).NewClient(t)
			}
			h := hub.New(rdb, false)
			ch := redistest.UniqueName(t)
			subs := subscribeN(t, h, ch, 5)
			for _, c := range []struct {
				payload string
				want    int
			}{{"1", 1}, {"2", 2}, {"-1", 5}, {"junk", 1}, {"9", 5}} {
				if err := rdb.Publish(t.Context(), ch, c.payload).Err(); err != nil {
					t.Fatal(err)
				}
				settle(t, subs, c.want)
			}
		})
	}
}

func TestCoalescedWakeUps(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	subs := subscribeN(t, h, ch, 2)
	// Three notifications for one waiter each while nobody runs: the first
	// two wake both waiters, the third finds them woken and is absorbed
	// instead of blocking the dispatcher or carrying over.
	for range 3 {
		rdb.Publish(t.Context(), ch, "1")
	}
	redistest.WaitFor(t, 2*time.Second, func() bool { return len(subs[0].C()) == 1 && len(subs[1].C()) == 1 })
	rdb.Publish(t.Context(), ch, "-1") // a marker: once both are woken by it, the three were dispatched
	time.Sleep(50 * time.Millisecond)
	if n := woken(subs); n != 2 {
		t.Fatalf("%d waiters woken, want 2", n)
	}
	rdb.Publish(t.Context(), ch, "1")
	settle(t, subs, 1)
}

func TestCloseConsumedPassesWakeUp(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	subs := subscribeN(t, h, ch, 2)
	rdb.Publish(t.Context(), ch, "1")
	var first, second *hub.Subscription
	redistest.WaitFor(t, 2*time.Second, func() bool {
		for i, s := range subs {
			select {
			case <-s.C():
				first, second = s, subs[1-i]
				return true
			default:
			}
		}
		return false
	})
	first.CloseConsumed() // took the wake-up, then gave up
	select {
	case <-second.C():
	case <-time.After(time.Second):
		t.Fatal("a wake-up taken by a leaving waiter was not passed on")
	}
}

func TestRefcountedChannels(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb, admin := srv.NewClient(t), srv.NewClient(t)
	ignore := goleak.IgnoreCurrent()
	h := hub.New(rdb, false)
	a, b := redistest.UniqueName(t)+"a", redistest.UniqueName(t)+"b"
	sa := subscribeN(t, h, a, 3)
	sb := subscribeN(t, h, b, 1)
	if n := redistest.NumSub(t, admin, a); n != 1 {
		t.Fatalf("NUMSUB %s = %d, want 1 subscription for 3 waiters", a, n)
	}
	if n := redistest.ClientCount(t, admin, "pubsub"); n != 1 {
		t.Fatalf("%d pub/sub connections, want 1", n)
	}
	for _, s := range sa {
		s.Close()
	}
	redistest.WaitFor(t, time.Second, func() bool { return redistest.NumSub(t, admin, a) == 0 })
	if n := redistest.NumSub(t, admin, b); n != 1 {
		t.Fatalf("closing a's waiters unsubscribed b (NUMSUB %d)", n)
	}
	sb[0].Close()
	sb[0].Close() // idempotent
	redistest.WaitFor(t, time.Second, func() bool { return redistest.ClientCount(t, admin, "pubsub") == 0 })
	redistest.VerifyNone(t, ignore)
}

func TestReconnectWakesEveryone(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb, admin := srv.NewClient(t), srv.NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	subs := subscribeN(t, h, ch, 4)
	if err := admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	settle(t, subs, 4)
	// The channel is subscribed again and notifications flow.
	redistest.WaitFor(t, 2*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 1 })
	rdb.Publish(t.Context(), ch, "1")
	settle(t, subs, 1)
}

func TestSubscribeCancelled(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(t)
	srv.Stop() // nothing answers: the subscription cannot be confirmed
	h := hub.New(rdb, false)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := h.Subscribe(ctx, "x"); err == nil {
		t.Fatal("Subscribe to a stopped server succeeded")
	}
}

func TestJoin(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb, admin := srv.NewClient(t), srv.NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	if s := h.Join(ch); s != nil {
		t.Fatal("Join of a channel nobody subscribed returned a subscription")
	}
	first := subscribeN(t, h, ch, 1)
	joined := h.Join(ch)
	if joined == nil {
		t.Fatal("Join of a subscribed channel returned nil")
	}
	t.Cleanup(joined.Close)
	if n := redistest.NumSub(t, admin, ch); n != 1 {
		t.Fatalf("NUMSUB %s = %d after Join, want 1", ch, n)
	}
	// The joined waiter is second in line: the first message wakes the
	// first waiter, the next one the joined waiter.
	subs := append(first, joined)
	rdb.Publish(t.Context(), ch, "1")
	settle(t, subs[:1], 1)
	if woken(subs[1:]) != 0 {
		t.Fatal("one message woke the joined waiter too")
	}
	// The first leaves: the joined subscription keeps the channel.
	first[0].Close()
	rdb.Publish(t.Context(), ch, "1")
	settle(t, subs[1:], 1)
	joined.Close()
	redistest.WaitFor(t, time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 0 })
	if s := h.Join(ch); s != nil {
		t.Fatal("Join after the last waiter left returned a subscription")
	}
}

// A message announcing n free units wakes, in line order, the waiters whose
// needs fit, each taking its need from n; a waiter that leaves with a
// wake-up it did not use passes on what it needed.
func TestWakeNeeds(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	var subs []*hub.Subscription
	for _, need := range []int{4, 1, 2, 1} {
		s, err := h.SubscribeNeeding(t.Context(), ch, need)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		subs = append(subs, s)
	}
	for _, c := range []struct {
		payload string
		want    []int // indexes of the waiters woken
	}{
		{"1", []int{1}},          // the waiter for 4 is passed over
		{"3", []int{1, 2}},       // 1 + 2; the second waiter for 1 does not fit
		{"4", []int{0}},          // first in line, and it takes all four
		{"9", []int{0, 1, 2, 3}}, // everyone fits
		{"-1", []int{0, 1, 2, 3}},
	} {
		if err := rdb.Publish(t.Context(), ch, c.payload).Err(); err != nil {
			t.Fatal(err)
		}
		got := wokenIndexes(t, subs, len(c.want))
		if !slices.Equal(got, c.want) {
			t.Fatalf("message %q woke waiters %v, want %v", c.payload, got, c.want)
		}
	}
	// The waiter for 4 takes a wake-up and leaves without using it: its
	// four units go to the waiters behind it that fit.
	rdb.Publish(t.Context(), ch, "4")
	if got := wokenIndexes(t, subs, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("message \"4\" woke %v, want [0]", got)
	}
	subs[0].CloseConsumed()
	if got := wokenIndexes(t, subs[1:], 3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("the leaving waiter's units woke %v of the rest, want all three", got)
	}
}

// A waiter woken by a message that passed over a bigger waiter behind it
// passes on, when it leaves unused, every unit the message had left when
// it reached it: the bigger waiter may fit now.
func TestPassOnCarriesTheMessage(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	var subs []*hub.Subscription
	for _, need := range []int{1, 4} {
		s, err := h.SubscribeNeeding(t.Context(), ch, need)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		subs = append(subs, s)
	}
	rdb.Publish(t.Context(), ch, "4") // wakes the waiter for 1; 3 left do not fit the waiter for 4
	if got := wokenIndexes(t, subs, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("message \"4\" woke %v, want [0]", got)
	}
	subs[0].CloseConsumed()
	if got := wokenIndexes(t, subs[1:], 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("the leaving waiter passed on to %v, want the waiter for 4", got)
	}
}

// wokenIndexes waits until want subscriptions hold a wake-up, checks that
// no more arrive for a moment, and returns their indexes, draining them.
func wokenIndexes(t *testing.T, subs []*hub.Subscription, want int) []int {
	t.Helper()
	seen := make(map[int]bool)
	drain := func() {
		for i, s := range subs {
			select {
			case <-s.C():
				seen[i] = true
			default:
			}
		}
	}
	redistest.WaitFor(t, 2*time.Second, func() bool { drain(); return len(seen) >= want })
	time.Sleep(50 * time.Millisecond) // a surplus wake-up would arrive within this
	drain()
	var got []int
	for i := range subs {
		if seen[i] {
			got = append(got, i)
		}
	}
	return got
}

// A grant message wakes the waiter on the channel and carries its token,
// read once; a wake-up already pending does not swallow it.
func TestGrantMessage(t *testing.T) {
	srv := redistest.SharedServer(t)
	rdb := srv.NewClient(t)
	h := hub.New(rdb, false)
	ch := redistest.UniqueName(t)
	s := subscribeN(t, h, ch, 1)[0]
	if err := rdb.Publish(t.Context(), ch, "1").Err(); err != nil {
		t.Fatal(err)
	}
	settle(t, []*hub.Subscription{s}, 1)
	if _, ok := s.Message(); ok {
		t.Fatal("a count read as a message")
	}
	if err := rdb.Publish(t.Context(), ch, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Publish(t.Context(), ch, "g42:1732451234567").Err(); err != nil {
		t.Fatal(err)
	}
	var p string
	ok := false
	redistest.WaitFor(t, 2*time.Second, func() bool { p, ok = s.Message(); return ok })
	if p != "g42:1732451234567" {
		t.Fatalf("message %q, want the payload as published", p)
	}
	if _, again := s.Message(); again {
		t.Fatal("a message read twice")
	}
	if woken([]*hub.Subscription{s}) != 1 {
		t.Fatal("the grant did not wake the waiter")
	}
}

// Deliver, the in-process handoff, reaches only a waiter that parked
// before the release was sent: a later wait never takes an old grant.
func TestDeliver(t *testing.T) {
	srv := redistest.SharedServer(t)
	h := hub.New(srv.NewClient(t), false)
	ch := redistest.UniqueName(t)
	s := subscribeN(t, h, ch, 1)[0]
	g := "g7:1"
	h.Deliver(ch, g, time.Now())
	if _, ok := s.Message(); ok {
		t.Fatal("a waiter that never parked took a delivered grant")
	}
	parked := time.Now()
	s.Parked(parked)
	h.Deliver(ch, g, parked.Add(-time.Millisecond)) // a release sent before it parked
	if _, ok := s.Message(); ok {
		t.Fatal("a grant sent before the waiter parked was delivered to it")
	}
	h.Deliver(ch, g, parked.Add(time.Millisecond))
	if got, ok := s.Message(); !ok || got != g {
		t.Fatalf("delivered grant = %q, %v; want %q, true", got, ok, g)
	}
	if woken([]*hub.Subscription{s}) != 1 {
		t.Fatal("the delivered grant did not wake the waiter")
	}
	h.Deliver("no-such-channel", g, time.Now()) // nobody waits: nothing happens
}

// Without sharding a channel lingers after its last waiter leaves: one
// that comes back within Linger joins it without a SUBSCRIBE, and the
// channel is unsubscribed, and the connection closed, once it has been
// idle for Linger.
func TestChannelLingers(t *testing.T) {
	srv := redistest.SharedServer(t)
	admin := srv.NewClient(t)
	h := hub.New(srv.NewClient(t), false)
	ch := redistest.UniqueName(t)
	s, err := h.Subscribe(t.Context(), ch)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Close()
		left := time.Now()
		again := h.Join(ch)
		if again == nil {
			if time.Since(left) < hub.Linger {
				t.Fatal("a channel whose last waiter just left was not kept subscribed")
			}
			t.Skip("the machine paused longer than the linger")
		}
		s = again
	}
	s.Close()
	redistest.WaitFor(t, 2*time.Second, func() bool { return redistest.NumSub(t, admin, ch) == 0 })
	if h.Join(ch) != nil {
		t.Fatal("joined a channel after its linger")
	}
}
