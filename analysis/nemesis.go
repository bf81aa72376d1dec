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

// The fault kinds, one per segment; the last, mixed, draws each fault it
// injects from the others (see mixed.go).
var faultKinds = []string{"pause", "partition", "kill", "restart", "restart-persist", "server-pause", "clock",
	"failover", "replica-partition", "late", "quorum-minority", "quorum-majority", "mixed"}

// applies reports whether the harness runs prim under fault: the cuts
// from some of the quorum's servers only make sense for the quorum. (A
// server pause and a failover never meet: a segment runs one kind, and a
// mixed one leaves the failover out, see mixedPool.)
func applies(prim, fault string) bool {
	return !strings.HasPrefix(fault, "quorum-") || servers(prim) == 3
}

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
	"server-pause": "redis-server (the first; two of the quorum's three, a majority) is stopped with SIGSTOP " +
		"for the grant lease (3s) plus the lease, then continued with SIGCONT: its wall clock runs on meanwhile, " +
		"and what the clients sent it in the pause (renewals, releases, acquisitions they gave up on) runs when " +
		"it continues",
	"clock": "redis-server's wall clock (of two of the quorum's three) jumps forward by the grant lease (3s) plus " +
		"the lease, through an LD_PRELOAD shim of the harness's own, and back to the true time a second later",
	"failover": "the first server is a primary with one asynchronously replicated replica and a Sentinel " +
		"(down-after 2.5s), and the clients reach it through the Sentinel (go-redis's failover client); the " +
		"primary is cut off from the Sentinel and the replica by blackhole routes while the clients still reach " +
		"it, until the Sentinel has promoted the replica and 500ms more (a split brain), then the cut heals and " +
		"the harness makes the old primary a replica of the new one (as the Sentinel would, seconds later)",
	"replica-partition": "the first server's primary and its replica are cut apart (blackhole routes both ways) " +
		"for the grant lease (3s) plus the lease; clients and harness still reach both, nothing fails over",
	"late": "a proxy of the harness's own sits between each client and each server; the holder's open " +
		"connections are stalled every 200ms for a lease, then every client's for another lease: what a client " +
		"sends on a stalled connection is held for 5.5s (past the library's 5s request window) and then " +
		"delivered in order, long after the client's 500ms timeout gave it up, while the connections it opens " +
		"afterwards work until the next stall",
	"quorum-minority": "(the quorum only) the holder is cut off (a blackhole route in its namespace) from " +
		"one of the quorum's three servers for the grant lease (3s) plus the lease: it keeps a majority",
	"quorum-majority": "(the quorum only) the holder is cut off from two of the quorum's three servers for " +
		"the grant lease (3s) plus the lease: it loses its majority",
	"mixed": "one fault after another, each drawn at random (seeded: -seed) from every kind above that applies " +
		"to the primitive but the failover and the restart with persistence (each needs a setup that changes " +
		"what the others do), each with its usual length and quiet time; an overlap counts under the fault " +
		"injected, or in its quiet time, when it began",
}

// A faultEvent is one fault the nemesis injected.
type faultEvent struct {
	kind, target string
	at, end      time.Time
}

const (
	warmup = 600 * time.Millisecond
)

// recovery is the quiet time after each fault: a lease, at most half a
// lease and 2s, at least 1s. In that time the fault's effects play out: a
// holder that lost its hold hears of it at its next renewal (a third of a
// lease later at most) or at once from its local timer, and a killed
// holder's lease runs out within a lease of the kill, of which the kill's
// own length (half a lease) is the first half. With the 1s lease it is
// 1s, as it always was; with the default 30s lease 17s.
func recovery(lease time.Duration) time.Duration {
	return max(time.Second, min(lease, lease/2+2*time.Second))
}

// injectSlack is what one injection of kind takes beyond its length, on
// a 2-core machine shared with other work: starting a server or a client
// process, the routes set and removed, a replica brought back in sync, a
// failover's promotion. The plan counts it so that a segment planned for
// n faults gets n.
func injectSlack(kind string) time.Duration {
	switch kind {
	case "restart", "restart-persist", "kill", "replica-partition", "late":
		return 500 * time.Millisecond
	case "failover":
		return 1500 * time.Millisecond
	}
	return 200 * time.Millisecond
}

// faultCost is the time one fault of kind takes in the plan: its length,
// its slack and the quiet time after it.
func faultCost(kind string, lease time.Duration) time.Duration {
	return faultLength(kind, lease) + injectSlack(kind) + recovery(lease)
}

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
	case "pause", "partition", "server-pause", "replica-partition", "quorum-minority", "quorum-majority":
		return grantLease + lease
	case "failover":
		// The Sentinel's down-after, its election and promotion (about a
		// second and a half), the split after it, the old primary's
		// resync (the Sentinel fails a group over again only two failover
		// timeouts after the last failover began, less than this).
		return downAfter + 2*time.Second + splitAfterPromotion
	case "late":
		return 2*lease + lateHold + lateAfter
	case "kill":
		return lease / 2
	case "clock":
		return time.Second
	}
	return 100 * time.Millisecond
}

// minSegment is the shortest segment that holds want faults of kind;
// for mixed, at least mixedFaults faults drawn, each planned as a pause
// (or a cut) is: a draw that would not fit is left for a shorter kind
// (see next).
func minSegment(kind string, lease time.Duration, want int) time.Duration {
	d := time.Duration(max(1, want)) * faultCost(kind, lease)
	if kind == "mixed" {
		d = time.Duration(max(mixedFaults, want)) * faultCost("pause", lease)
	}
	return warmup + d + 300*time.Millisecond
}

// nemesis injects the segment's fault (for mixed, a fault drawn each
// time) again and again until the segment has no time left for another,
// with a quiet time after each.
func (s *segment) nemesis(ctx context.Context) {
	lease := s.lease
	sleep(ctx, time.Until(s.start.Add(warmup)))
	for ctx.Err() == nil {
		kind := s.next()
		if kind == "" {
			break
		}
		ev := faultEvent{kind: kind, at: time.Now()}
		ev.target = s.inject(ctx, kind)
		ev.end = time.Now()
		fmt.Printf("  %s: %s (%v)\n", kind, ev.target, ev.end.Sub(ev.at).Round(time.Millisecond))
		s.injected = append(s.injected, ev)
		sleep(ctx, recovery(lease))
	}
	sleep(ctx, time.Until(s.until))
}

// inject runs one fault of kind and returns what it hit.
func (s *segment) inject(ctx context.Context, kind string) string {
	lease := s.lease
	switch kind {
	case "pause":
		c := s.target()
		c.p.signal(syscall.SIGSTOP)
		sleep(ctx, faultLength(kind, lease))
		c.p.signal(syscall.SIGCONT)
		return c.who()
	case "partition":
		c := s.target()
		if err := partition(c.id, true); err != nil {
			return "error: " + err.Error()
		}
		sleep(ctx, faultLength(kind, lease))
		if err := partition(c.id, false); err != nil {
			return "error: " + err.Error()
		}
		return c.who()
	case "kill":
		c := s.target()
		c.p.kill()
		_, _ = s.resc.count("G", c.who())
		sleep(ctx, faultLength(kind, lease))
		if err := s.startClient(c.id); err != nil {
			return "error: " + err.Error()
		}
		return c.who()
	case "clock":
		return s.jumpClocks(ctx)
	case "server-pause":
		return s.pauseServers(ctx)
	case "failover":
		sleep(ctx, time.Until(s.lastFailover.Add(2*failoverTimeout+200*time.Millisecond)))
		s.lastFailover = time.Now()
		return s.failover(ctx)
	case "replica-partition":
		return s.cutReplica(ctx, faultLength(kind, lease))
	case "late":
		return s.lateDeliver(ctx)
	case "quorum-minority", "quorum-majority":
		return s.cutFromServers(ctx, kind)
	default: // restart, restart-persist
		if err := s.nodes[0].restart(ctx); err != nil {
			return "error: " + err.Error()
		}
		if kind == "restart" {
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
	jump := grantLease + s.lease
	for _, n := range nodes {
		if err := n.clock.set(jump); err != nil {
			return "error: " + err.Error()
		}
	}
	sleep(ctx, faultLength("clock", s.lease))
	for _, n := range nodes {
		if err := n.clock.set(0); err != nil {
			return "error: " + err.Error()
		}
	}
	return fmt.Sprintf("%d redis-server(s), +%v and back", len(nodes), jump)
}

// pauseServers stops the first server, or two of the quorum's three (a
// majority: a pause of one of three is a cut from a minority, which
// quorum-minority covers), for the fault's length, then continues them.
// An interrupt ends the sleep early, never the SIGCONT: the teardown
// kills a running server, and no stopped one is left behind.
func (s *segment) pauseServers(ctx context.Context) string {
	nodes := s.nodes[:min(2, len(s.nodes))]
	for _, n := range nodes {
		n.proc.signal(syscall.SIGSTOP)
	}
	d := faultLength("server-pause", s.lease)
	sleep(ctx, d)
	for _, n := range nodes {
		n.proc.signal(sigCont)
	}
	return fmt.Sprintf("%d redis-server(s), stopped %v", len(nodes), d)
}

// cutFromServers cuts the holder off from the first server
// (quorum-minority) or the first two (quorum-majority) for the fault's
// length, with blackhole routes in its namespace: it still reaches the
// others and the resource.
func (s *segment) cutFromServers(ctx context.Context, kind string) string {
	c, n := s.target(), 1
	if kind == "quorum-majority" {
		n = 2
	}
	for k := 1; k <= n; k++ {
		if err := blackhole(clientNS(c.id), serverIP(k), true); err != nil {
			return "error: " + err.Error()
		}
	}
	sleep(ctx, faultLength(kind, s.lease))
	for k := 1; k <= n; k++ {
		if err := blackhole(clientNS(c.id), serverIP(k), false); err != nil {
			return "error: " + err.Error()
		}
	}
	return fmt.Sprintf("%s from %d of 3 servers", c.who(), n)
}
