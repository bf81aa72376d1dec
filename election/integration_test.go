package election_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
)

// Integration tier: real redis-server processes.

// seen is a leader and when it was seen: by its candidate when its
// Campaign returned, or by an observer when it received it.
type seen struct {
	election.Leader
	at time.Time
}

// observeAll runs Observe on each client until ctx ends and returns what
// each observer received, in order, once they have all ended.
func observeAll(ctx context.Context, name string, clients []redis.UniversalClient) func() [][]seen {
	got := make([][]seen, len(clients))
	var wg sync.WaitGroup
	for i, rdb := range clients {
		ch := election.New(rdb, name).Observe(ctx)
		wg.Go(func() {
			for l := range ch {
				got[i] = append(got[i], seen{l, time.Now()})
			}
		})
	}
	return func() [][]seen { wg.Wait(); return got }
}

// Three candidates on three clients take 20 turns, each leading until it
// resigns. Exactly one leads at a time (an unprotected read-modify-write
// counter in Redis stays exact), terms strictly increase, and each of
// three observers on clients of their own sees every leader, in order,
// within a second of its Campaign returning.
func TestRoundsIntegration(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	testRounds(t, 20, func() redis.UniversalClient { return srv.NewClient(t) })
}

// The same on a 3-master cluster, where wake-ups and changes go through
// sharded pub/sub.
func TestRoundsClusterIntegration(t *testing.T) {
	c := redistest.SharedCluster(t)
	testRounds(t, 6, func() redis.UniversalClient { return c.NewClient(t) })
}

func testRounds(t *testing.T, rounds int64, newClient func() redis.UniversalClient) {
	name := redistest.UniqueName(t)
	ctx, stopObserving := context.WithCancel(t.Context())
	defer stopObserving()
	observed := observeAll(ctx, name, []redis.UniversalClient{newClient(), newClient(), newClient()})

	admin := newClient()
	counter := "counter-{" + name + "}"
	campaignCtx, stop := context.WithCancel(t.Context())
	defer stop()
	var (
		mu      sync.Mutex
		leaders []seen
		leading atomic.Int64
		turns   atomic.Int64
		wg      sync.WaitGroup
		losers  sync.WaitGroup // the candidates still campaigning when the last turn ends
	)
	for i := range 3 {
		e := election.New(newClient(), name)
		wg.Add(1)
		losers.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				value := fmt.Sprintf("c%d-%d", i, k)
				if err := e.Campaign(campaignCtx, value); err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Campaign: %v", err)
					}
					losers.Done()
					return
				}
				if n := leading.Add(1); n != 1 {
					t.Errorf("%d leaders at once", n)
				}
				mu.Lock()
				leaders = append(leaders, seen{election.Leader{Value: value, Term: e.Term()}, time.Now()})
				mu.Unlock()
				v, _ := admin.Get(t.Context(), counter).Int()
				time.Sleep(100 * time.Millisecond) // long enough for every observer to read it
				admin.Set(t.Context(), counter, v+1, time.Minute)
				leading.Add(-1)
				if turns.Add(1) == rounds {
					// The others give up before the last leader resigns,
					// so that nobody leads after it.
					losers.Done()
					stop()
					losers.Wait()
					// A candidate that gave up leaves the line in the
					// background (perclient.TidyUp): wait for that, or
					// the resignation may grant it the leadership it
					// then gives back.
					perclient.AwaitTidied(t.Context())
				}
				if err := e.Resign(t.Context()); err != nil {
					t.Errorf("Resign: %v", err)
				}
				if campaignCtx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // the observers read the last change
	stopObserving()
	if n, _ := admin.Get(t.Context(), counter).Int64(); n != rounds {
		t.Errorf("counter = %d after %d turns, want %d", n, rounds, rounds)
	}
	if int64(len(leaders)) != rounds {
		t.Fatalf("%d leaders, want %d", len(leaders), rounds)
	}
	for i := 1; i < len(leaders); i++ {
		if leaders[i].Term <= leaders[i-1].Term {
			t.Errorf("term %d of leader %d is not above %d", leaders[i].Term, i, leaders[i-1].Term)
		}
	}
	for o, got := range observed() {
		if len(got) != len(leaders) {
			t.Errorf("observer %d saw %d leaders, want %d: %v", o, len(got), len(leaders), got)
			continue
		}
		for i, s := range got {
			want := leaders[i]
			if s.Leader != want.Leader {
				t.Errorf("observer %d: leader %d = %+v, want %+v", o, i, s.Leader, want.Leader)
			}
			if d := s.at.Sub(want.at); d > time.Second || d < -time.Second {
				t.Errorf("observer %d saw leader %d %v after its Campaign returned", o, i, d)
			}
		}
	}
	assertNoKeys(t, admin, name)
}

// The leader's process is SIGKILLed: with a 2s watchdog timeout, the
// candidate in line leads within 3s, and Leader reports it with a higher
// term.
func TestLeaderKilledIntegration(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	h := redistest.StartHelper(t, "lead", srv.Addr(), name)
	line := h.Next(t, 10*time.Second)
	killedTerm, err := strconv.ParseUint(strings.TrimPrefix(line, "leading "), 10, 64)
	if err != nil {
		t.Fatalf("helper wrote %q", line)
	}
	rdb := srv.NewClient(t)
	e := election.New(rdb, name, election.WithWatchdogTimeout(2*time.Second))
	got := make(chan error, 1)
	go func() { got <- e.Campaign(t.Context(), "survivor") }()
	waitLine(t, rdb, name, 1)
	h.Kill()
	killed := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no candidate led within 10s of the leader's death")
	}
	took := time.Since(killed)
	t.Logf("the candidate led %v after the leader was killed", took)
	if took > 3*time.Second {
		t.Errorf("the candidate led %v after the leader was killed, want within 3s", took)
	}
	l := mustLeader(t, e)
	if l.Value != "survivor" || l.Term <= killedTerm || l.Term != e.Term() {
		t.Errorf("Leader = %+v, want survivor in a term above %d (its own, %d)", l, killedTerm, e.Term())
	}
	mustOK(t, e.Resign(t.Context()))
}

// Run: a nil return resigns (the candidate in line leads next) and
// campaigns again; an error return ends Run with that error, resigned.
func TestRunReturnsIntegration(t *testing.T) {
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	ctx := t.Context()
	e, other := election.New(srv.NewClient(t), name), election.New(srv.NewClient(t), name)
	errDone := errors.New("done")
	var terms []uint64
	otherLed := make(chan uint64, 1)
	err := e.Run(ctx, "runner", func(ctx context.Context) error {
		terms = append(terms, e.Term())
		if len(terms) == 1 {
			go func() {
				if err := other.Campaign(t.Context(), "other"); err != nil {
					t.Error(err)
				}
				otherLed <- other.Term()
				time.Sleep(100 * time.Millisecond)
				if err := other.Resign(t.Context()); err != nil {
					t.Error(err)
				}
			}()
			waitLine(t, srv.NewClient(t), name, 1)
			return nil
		}
		return errDone
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("Run = %v, want fn's error", err)
	}
	otherTerm := <-otherLed
	if len(terms) != 2 || !(terms[0] < otherTerm && otherTerm < terms[1]) {
		t.Errorf("terms: Run's %v, the other's %d between them", terms, otherTerm)
	}
	if _, err := other.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after Run ended = %v, want ErrNoLeader: Run resigned", err)
	}
	if !redistest.Closed(e.Done()) || e.Term() != 0 {
		t.Error("after Run: Done open or a term left")
	}
	assertNoKeys(t, srv.NewClient(t), name)
}

// Run: fn's ctx is cancelled when the leadership is lost (CLIENT PAUSE
// past the lease), before another candidate leads; Run then campaigns
// again, and returns ctx's error when ctx ends.
func TestRunLossIntegration(t *testing.T) {
	redistest.Long(t)
	srv := redistest.Start(t)
	name := redistest.UniqueName(t)
	const lease = time.Second
	client := func() *redis.Client {
		return srv.NewClient(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	}
	admin := srv.NewClient(t)
	e := election.New(client(), name, election.WithWatchdogTimeout(lease))
	other := election.New(client(), name, election.WithWatchdogTimeout(lease))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lost, otherLed := make(chan time.Time, 1), make(chan time.Time, 1)
	var runs atomic.Int64
	var otherLeads atomic.Bool
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, "runner", func(fctx context.Context) error {
			switch runs.Add(1) {
			case 2:
				// Redis may still have the lost leadership (the renewal
				// the pause held back ran after it): Run led again at
				// once. Resigning hands it to the other candidate, once
				// its wait is live in line again: the pause may have
				// outlasted its deadline there (the keeper's refresh is
				// a write), and a release passes a dead waiter over.
				if !otherLeads.Load() {
					waitLive(t, admin, name)
				}
				return nil
			case 3:
				<-fctx.Done()
				return fctx.Err()
			}
			go func() {
				if err := other.Campaign(t.Context(), "other"); err != nil {
					t.Error(err)
					return
				}
				otherLeads.Store(true)
				otherLed <- time.Now()
			}()
			waitLine(t, admin, name, 1)
			if err := admin.Do(t.Context(), "CLIENT", "PAUSE", (2 * lease).Milliseconds(), "WRITE").Err(); err != nil {
				t.Error(err)
			}
			<-fctx.Done()
			lost <- time.Now()
			return fctx.Err()
		})
	}()
	var lostAt, ledAt time.Time
	select {
	case lostAt = <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("fn's ctx was not cancelled within 10s of a pause longer than the lease")
	}
	select {
	case ledAt = <-otherLed:
	case <-time.After(10 * time.Second):
		t.Fatal("the other candidate did not lead after the pause")
	}
	if !lostAt.Before(ledAt) {
		t.Errorf("fn's ctx was cancelled %v after the other candidate led", lostAt.Sub(ledAt))
	}
	t.Logf("fn's ctx was cancelled %v before the other candidate led", ledAt.Sub(lostAt))
	// Run campaigns again: it waits in line behind the other.
	waitLine(t, admin, name, 1)
	mustOK(t, other.Resign(t.Context()))
	redistest.WaitFor(t, 5*time.Second, func() bool { return runs.Load() == 3 })
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after ctx ended = %v, want an error wrapping context.Canceled", err)
	}
	assertNoKeys(t, admin, name)
}

// Terms keep increasing when Redis loses its data: the server is shut down
// without saving and restarted.
func TestTermsAcrossRestartIntegration(t *testing.T) {
	srv := redistest.Start(t)
	name := redistest.UniqueName(t)
	rdb := srv.NewClient(t)
	e := election.New(rdb, name, election.WithWatchdogTimeout(time.Second))
	var last uint64
	for range 3 {
		mustCampaign(t, e, "v")
		if e.Term() <= last {
			t.Fatalf("term %d is not above %d", e.Term(), last)
		}
		last = e.Term()
		mustOK(t, e.Resign(t.Context()))
	}
	mustCampaign(t, e, "v")
	last = e.Term()
	srv.Shutdown()
	srv.Restart(t)
	select {
	case <-e.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's Done stayed open after Redis lost its leadership")
	}
	after := election.New(rdb, name)
	mustCampaign(t, after, "after")
	defer func() { mustOK(t, after.Resign(context.Background())) }()
	l := mustLeader(t, e)
	if l.Value != "after" || l.Term <= last {
		t.Fatalf("Leader after the restart = %+v, want a term above %d", l, last)
	}
	t.Logf("the first term after the restart is %d above the last before", l.Term-last)
}

// Observers still see every change when their pub/sub connection is
// killed, and nothing is left behind by a candidate that gives up.
func TestObserversPubSubKilledIntegration(t *testing.T) {
	redistest.Long(t)
	srv := redistest.SharedServer(t)
	name := redistest.UniqueName(t)
	admin := srv.NewClient(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	observed := observeAll(ctx, name, []redis.UniversalClient{srv.NewClient(t), srv.NewClient(t)})
	a, b := election.New(srv.NewClient(t), name), election.New(srv.NewClient(t), name)
	mustCampaign(t, a, "a")
	want := []election.Leader{{Value: "a", Term: a.Term()}}
	time.Sleep(200 * time.Millisecond)
	admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub")
	mustOK(t, a.Proclaim(t.Context(), "a2"))
	want = append(want, election.Leader{Value: "a2", Term: a.Term()})
	time.Sleep(200 * time.Millisecond)
	got := make(chan error, 1)
	go func() { got <- b.Campaign(t.Context(), "b") }()
	waitLine(t, admin, name, 1)
	admin.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub")
	mustOK(t, a.Resign(t.Context()))
	mustOK(t, <-got)
	want = append(want, election.Leader{Value: "b", Term: b.Term()})
	time.Sleep(1500 * time.Millisecond) // a re-read at the latest
	// A candidate that gives up leaves nothing of its own.
	cctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := a.Campaign(cctx, "a3"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Campaign behind a leader = %v, want a deadline error", err)
	}
	perclient.AwaitTidied(t.Context()) // the candidate leaves the line in the background
	mustOK(t, b.Resign(t.Context()))
	stop()
	for o, seen := range observed() {
		var leaders []election.Leader
		for _, s := range seen {
			leaders = append(leaders, s.Leader)
		}
		if fmt.Sprint(leaders) != fmt.Sprint(want) {
			t.Errorf("observer %d saw %v, want %v", o, leaders, want)
		}
	}
	assertNoKeys(t, admin, name)
}

// The leader's network stalls for longer than its lease (a partition): its
// Done closes, and Run's fn's ctx is cancelled, before the candidate in
// line leads.
func TestLeaderPartitionedIntegration(t *testing.T) {
	direct, proxy, via := redistest.ProxiedServer(t)
	name := redistest.UniqueName(t)
	const lease = time.Second
	leader := election.New(via, name, election.WithWatchdogTimeout(lease))
	candidate := election.New(direct, name, election.WithWatchdogTimeout(lease))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- leader.Run(ctx, "partitioned", func(fctx context.Context) error {
			<-fctx.Done()
			select {
			case cancelled <- time.Now():
			default:
			}
			return fctx.Err()
		})
	}()
	redistest.WaitFor(t, 5*time.Second, func() bool { return leader.Term() != 0 })
	done := leader.Done()
	led := make(chan time.Time, 1)
	go func() {
		if err := candidate.Campaign(t.Context(), "candidate"); err != nil {
			t.Error(err)
		}
		led <- time.Now()
	}()
	waitLine(t, direct, name, 1)
	proxy.Stall()
	stalled := time.Now()
	var ledAt time.Time
	select {
	case ledAt = <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("the candidate did not lead within 10s of the leader's partition")
	}
	if !redistest.Closed(done) {
		t.Error("the candidate leads while the partitioned leader's Done is open")
	}
	select {
	case at := <-cancelled:
		if !at.Before(ledAt) {
			t.Errorf("fn's ctx was cancelled %v after the candidate led", at.Sub(ledAt))
		}
		t.Logf("fn's ctx was cancelled %v into the partition, %v before the candidate led", at.Sub(stalled), ledAt.Sub(at))
	default:
		t.Error("fn's ctx was not cancelled by the time the candidate led")
	}
	cancel()
	proxy.Resume()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want an error wrapping context.Canceled", err)
	}
	mustOK(t, candidate.Resign(t.Context()))
}
