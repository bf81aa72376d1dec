package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const sigCont = syscall.SIGCONT

// The fault kinds, one per segment.
var faultKinds = []string{"pause", "partition", "kill", "restart", "restart-persist", "clock"}

// faultDoc says what each fault kind does, for the page.
var faultDoc = map[string]string{
	"pause": "the holder (the client that last read the register) is stopped with SIGSTOP for the grant lease " +
		"(3s) plus the lease, then continued with SIGCONT: the GC pause of Kleppmann's argument",
	"partition": "the holder's link to Redis is set down for the grant lease (3s) plus the lease " +
		"(its packets are dropped, as on a cut cable), then up again; it still reaches the resource",
	"kill": "the holder is killed with SIGKILL; a new process of the same client starts half a lease later",
	"restart": "redis-server (the first of the quorum's three) is killed with SIGKILL and started again " +
		"on the same port with no persistence: every lock it held is gone (the leased semaphore's permits " +
		"are set again at once, as an operator would: the library cannot tell a lost total from one never set)",
	"restart-persist": "as restart, on a server that writes an AOF fsynced on every write (appendfsync always): " +
		"the locks survive",
	"clock": "redis-server's wall clock (of two of the quorum's three) jumps forward by the grant lease (3s) plus " +
		"the lease, through an LD_PRELOAD shim of the harness's own, and back to the true time a second later",
}

// A faultEvent is one fault the nemesis injected.
type faultEvent struct {
	kind, target string
	at, end      time.Time
}

const (
	warmup = 600 * time.Millisecond
)

// recovery is the quiet time after each fault.
func recovery(lease time.Duration) time.Duration { return max(time.Second, lease) }

// grantLease is the lease a release gives the waiter it hands the lock to
// (rlock's, and the quorum's members'; see hold.GrantLease in the
// library): until the new holder's first renewal, a third of its own lease
// later, the server keeps the lock that long, whatever the watchdog
// timeout. A pause or a cut must outlast it to let anyone else in.
const grantLease = 3 * time.Second

// faultLength is how long a fault of kind lasts: a pause or a cut lasts
// past the longest lease the server may be keeping for the holder (the
// grant lease, or a watchdog lease renewed just before).
func faultLength(kind string, lease time.Duration) time.Duration {
	switch kind {
	case "pause", "partition":
		return grantLease + lease
	case "kill":
		return lease / 2
	case "clock":
		return time.Second
	}
	return 100 * time.Millisecond
}

// minSegment is the shortest segment that holds one fault of kind.
func minSegment(kind string, lease time.Duration) time.Duration {
	return warmup + faultLength(kind, lease) + recovery(lease) + 300*time.Millisecond
}

// nemesis injects the segment's fault again and again until the segment
// has no time left for another, with a quiet time after each.
func (s *segment) nemesis(ctx context.Context) {
	lease := s.r.cfg.lease
	sleep(ctx, time.Until(s.start.Add(warmup)))
	for ctx.Err() == nil {
		if time.Now().Add(faultLength(s.fault, lease) + recovery(lease)).After(s.until) {
			break
		}
		ev := faultEvent{kind: s.fault, at: time.Now()}
		ev.target = s.inject(ctx)
		ev.end = time.Now()
		s.injected = append(s.injected, ev)
		sleep(ctx, recovery(lease))
	}
	sleep(ctx, time.Until(s.until))
}

// inject runs one fault and returns what it hit.
func (s *segment) inject(ctx context.Context) string {
	lease := s.r.cfg.lease
	switch s.fault {
	case "pause":
		c := s.target()
		c.p.signal(syscall.SIGSTOP)
		sleep(ctx, faultLength(s.fault, lease))
		c.p.signal(syscall.SIGCONT)
		return c.who()
	case "partition":
		c := s.target()
		if err := partition(c.id, true); err != nil {
			return "error: " + err.Error()
		}
		sleep(ctx, faultLength(s.fault, lease))
		if err := partition(c.id, false); err != nil {
			return "error: " + err.Error()
		}
		return c.who()
	case "kill":
		c := s.target()
		c.p.kill()
		_, _ = s.resc.count("G", c.who())
		sleep(ctx, faultLength(s.fault, lease))
		if err := s.startClient(c.id); err != nil {
			return "error: " + err.Error()
		}
		return c.who()
	case "clock":
		return s.jumpClocks(ctx)
	default: // restart, restart-persist
		if err := s.nodes[0].restart(ctx); err != nil {
			return "error: " + err.Error()
		}
		if s.fault == "restart" {
			if err := s.setPermits(ctx); err != nil {
				return "error: " + err.Error()
			}
		}
		return "redis-server " + s.nodes[0].addr()
	}
}

func (c *clientInst) who() string { return fmt.Sprintf("c%d.%d", c.id, c.inst) }

// target is the client most likely holding now, as the resource sees it;
// a random client when it cannot tell.
func (s *segment) target() *clientInst {
	for range 25 {
		who, err := s.resc.holder()
		if err == nil && who != "" {
			id, inst, ok := parseWho(who)
			if c := s.current[id]; ok && c != nil && c.inst == inst && !c.p.exited() {
				return c
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.current[1+rand.IntN(s.r.cfg.clients)]
}

// parseWho reads "c2.1".
func parseWho(who string) (id, inst int, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(who, "c"), ".")
	id, err1 := strconv.Atoi(a)
	inst, err2 := strconv.Atoi(b)
	return id, inst, found && err1 == nil && err2 == nil
}

// jumpClocks moves the servers' clocks forward past every lease they keep,
// then back to the true time: the first server's, or two of the quorum's
// three (a majority).
func (s *segment) jumpClocks(ctx context.Context) string {
	nodes := s.nodes[:min(2, len(s.nodes))]
	jump := grantLease + s.r.cfg.lease
	for _, n := range nodes {
		if err := n.clock.set(jump); err != nil {
			return "error: " + err.Error()
		}
	}
	sleep(ctx, faultLength(s.fault, s.r.cfg.lease))
	for _, n := range nodes {
		if err := n.clock.set(0); err != nil {
			return "error: " + err.Error()
		}
	}
	return fmt.Sprintf("%d redis-server(s), +%v and back", len(nodes), jump)
}
