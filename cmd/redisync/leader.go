package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/keyspace"
)

// leaderConfig sizes the leader scenario.
type leaderConfig struct {
	instances int                          // scheduler instances, each with a client of its own
	newClient func() redis.UniversalClient // a client as one more process would have
	advance   func(ctx context.Context)    // moves an embedded server's key expiry on with real time until ctx ends; nil for a real server
	prefix    string
}

// leaderLease is the lease of a leadership in the demo: how long a dead
// leader keeps the others waiting.
const leaderLease = time.Second

// schedulerRun is what the scheduler instances share: who runs the
// schedule now, and whether two ever did at once.
type schedulerRun struct {
	running atomic.Int64
	overlap atomic.Int64
	ticks   atomic.Int64
}

// tick is one run of the schedule by an instance that leads.
func (s *schedulerRun) tick() {
	if s.running.Add(1) > 1 {
		s.overlap.Add(1)
	}
	s.ticks.Add(1)
	time.Sleep(5 * time.Millisecond)
	s.running.Add(-1)
}

func demoLeader(ctx context.Context, w io.Writer, cfg *leaderConfig) error {
	fmt.Fprintf(w, "\n== leader ==\n%d instances of a report scheduler run election.Run: one leads and runs the schedule,\n"+
		"the others wait in line. Then the leader's process dies without resigning (its connection is cut):\n"+
		"the next instance takes over once the %v lease has run out. An observer prints every change.\n\n",
		cfg.instances, leaderLease)
	if cfg.instances < 2 {
		fmt.Fprintln(w, "(--instances 1: nobody to take over; the scenario needs 2 or more)")
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.advance != nil {
		go cfg.advance(ctx)
	}
	name := cfg.prefix + "leader"
	began := time.Now()
	changes := election.New(cfg.newClient(), name).Observe(ctx)
	seen := make(chan election.Leader, 16)
	// The observer prints from a goroutine of its own: w is shared with
	// this one, and the scenario returns only once the observer is done.
	w = &lockedWriter{w: w}
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for l := range changes {
			fmt.Fprintf(w, "  %s  observer: %s leads (term %d)\n", since(began), l.Value, l.Term)
			select {
			case seen <- l:
			case <-ctx.Done():
			}
		}
		close(seen)
	}()
	defer func() {
		cancel()
		<-observed
	}()

	run := &schedulerRun{}
	clients := make([]redis.UniversalClient, cfg.instances)
	stops := make([]context.CancelFunc, cfg.instances)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = cfg.newClient()
		e := election.New(clients[i], name, election.WithWatchdogTimeout(leaderLease))
		ictx, stop := context.WithCancel(ctx)
		stops[i] = stop
		wg.Go(func() {
			_ = e.Run(ictx, fmt.Sprintf("instance-%d", i), func(ctx context.Context) error {
				for pause(ctx, 50*time.Millisecond) == nil {
					run.tick()
				}
				return nil
			})
		})
		if i == 0 {
			<-seen // the first instance leads; the others queue behind it in turn
			continue
		}
		queue := keyspace.NewNames(name).Queue()
		for j := 0; j < 100 && clients[i].LLen(ctx, queue).Val() < int64(i); j++ {
			_ = pause(ctx, 10*time.Millisecond)
		}
	}
	defer wg.Wait()
	defer cancel()

	if err := pause(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	died := time.Now()
	fmt.Fprintf(w, "  %s  instance-0's process dies\n", since(began))
	_ = clients[0].Close() // no renewal, no resignation: the lease runs out
	stops[0]()
	var next election.Leader
	select {
	case next = <-seen:
	case <-time.After(10 * leaderLease):
		return failures(w, "leader", []string{fmt.Sprintf("no instance took over within %v of the leader's death", 10*leaderLease)})
	}
	took := time.Since(died)
	if err := pause(ctx, 300*time.Millisecond); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var failed []string
	if n := run.overlap.Load(); n > 0 {
		failed = append(failed, fmt.Sprintf("two instances ran the schedule at once %d time(s)", n))
	}
	if err := failures(w, "leader", failed); err != nil {
		return err
	}
	fmt.Fprintf(w, "- %s took over %v after the leader died: the rest of its lease (%v at most) and a wake-up\n", next.Value, fmtDuration(took.Round(10*time.Millisecond)), leaderLease)
	fmt.Fprintf(w, "- every term is higher than the last: a fencing token for what the leader writes\n")
	fmt.Fprintf(w, "- the schedule ran %d times, never on two instances at once: checked\n", run.ticks.Load())
	return nil
}

// since prints the time since began as a clock of the scenario.
func since(began time.Time) string {
	return fmt.Sprintf("%5.2fs", time.Since(began).Seconds())
}

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
