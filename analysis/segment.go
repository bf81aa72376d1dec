package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"math/rand/v2"

	"github.com/redisync/redisync/semaphore"
)

// A segment is one primitive under one fault kind: fresh redis-servers, a
// fresh resource, every client started on its own history, the nemesis,
// then the check.
type segment struct {
	r           *run
	n           int
	prim, fault string
	lease       time.Duration // the watchdog timeout of every hold
	want        int           // faults asked (-injections): mixed draws until it has them
	extraLease  bool          // a segment of -leases beyond the first
	dur         time.Duration
	dir         string

	nodes        []*redisNode         // the lock servers; the first is the primary when there is a replica
	replica      *redisNode           // the first server's replica (rlock-ack, the replication faults), or nil
	sentinel     *sentinel            // the Sentinel watching them (failover), or nil
	proxies      map[int][]*lateProxy // client id -> a proxy per lock server (late)
	lateLog      *lateLog
	lastFailover time.Time
	res          *proc
	resAddr      string
	resc         *resClient // the harness's own connection to the resource
	current      map[int]*clientInst
	insts        []*clientInst
	start, until time.Time
	injected     []faultEvent
	rng          *rand.Rand // the mixed segment's draws, seeded by -seed and the segment's number
}

// A clientInst is one process instance of a client.
type clientInst struct {
	id, inst int
	p        *proc
	hist     string
	log      *os.File
}

func (s *segment) name() string { return fmt.Sprintf("analysis-%02d", s.n) }

func (s *segment) run(ctx context.Context) (segResult, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return segResult{}, err
	}
	defer s.teardown()
	if err := s.startServers(ctx); err != nil {
		return segResult{}, err
	}
	s.current = map[int]*clientInst{}
	s.start = time.Now()
	s.until = s.start.Add(s.dur)
	if s.lateLog != nil {
		s.lateLog.start = s.start // before any client runs: no proxy reads it yet
	}
	for i := 1; i <= s.r.cfg.clients; i++ {
		if err := s.startClient(i); err != nil {
			return segResult{}, err
		}
	}
	s.nemesis(ctx)
	if ctx.Err() != nil {
		return segResult{}, ctx.Err()
	}
	s.waitClients()
	left, err := s.keysLeft(ctx)
	if err != nil {
		return segResult{}, err
	}
	delivered, refused := s.lateCounts(ctx)
	s.teardown()
	res, err := s.check(left)
	res.lateDelivered, res.lateRefused, res.lateScripts = delivered, refused, s.lateLog.summary()
	return res, err
}

func (s *segment) startServers(ctx context.Context) error {
	shim := ""
	if s.uses("clock") {
		shim = s.r.shim
	}
	for i := range servers(s.prim) {
		node, err := newRedisNode(i+1, filepath.Join(s.dir, fmt.Sprintf("redis%d", i)), s.fault == "restart-persist", shim)
		if err != nil {
			return err
		}
		s.nodes = append(s.nodes, node)
		if err := node.start(ctx); err != nil {
			return err
		}
		if node.clock != nil {
			if err := node.checkClock(ctx); err != nil {
				return err
			}
		}
	}
	if err := s.startReplication(ctx); err != nil {
		return err
	}
	if err := s.setPermits(ctx); err != nil {
		return err
	}
	if s.uses("late") {
		if err := s.startProxies(); err != nil {
			return err
		}
	}
	port, err := freePort(resIP)
	if err != nil {
		return err
	}
	s.resAddr = net.JoinHostPort(resIP, strconv.Itoa(port))
	out, err := os.Create(filepath.Join(s.dir, "resource.out"))
	if err != nil {
		return err
	}
	s.res, err = startProc("resource", out, nil, s.r.exe, "resource",
		"-listen", s.resAddr, "-log", filepath.Join(s.dir, "resource.jsonl"))
	if err != nil {
		return err
	}
	s.resc = newResClient(s.resAddr, 500*time.Millisecond)
	for range 100 {
		if _, err = s.resc.holder(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the resource did not start: %w", err)
}

// setPermits gives the leased semaphore its permits (again, after a
// restart that lost them: the library cannot tell a lost total from one
// never set, and an operator sets it again).
func (s *segment) setPermits(ctx context.Context) error {
	if s.prim != "leased" {
		return nil
	}
	rdb := s.nodes[0].client()
	defer rdb.Close()
	return semaphore.NewLeased(rdb, s.name()).SetPermits(ctx, int64(s.r.cfg.permits))
}

// startClient starts the next instance of client id in its namespace.
func (s *segment) startClient(id int) error {
	inst := 1
	if c := s.current[id]; c != nil {
		inst = c.inst + 1
	}
	c := &clientInst{id: id, inst: inst, hist: filepath.Join(s.dir, fmt.Sprintf("client%d.%d.jsonl", id, inst))}
	var err error
	if c.log, err = os.Create(filepath.Join(s.dir, fmt.Sprintf("client%d.%d.out", id, inst))); err != nil {
		return err
	}
	var addrs []string
	for j, n := range s.nodes {
		if s.proxies != nil {
			addrs = append(addrs, s.proxies[id][j].addr())
		} else {
			addrs = append(addrs, n.addr())
		}
	}
	argv := []string{"ip", "netns", "exec", clientNS(id), s.r.exe, "client",
		"-primitive", s.prim, "-name", s.name(), "-lease", s.lease.String(),
		"-id", strconv.Itoa(id), "-inst", strconv.Itoa(inst), "-redis", strings.Join(addrs, ","),
		"-resource", s.resAddr, "-history", c.hist, "-until", strconv.FormatInt(s.until.UnixNano(), 10),
		"-work", s.r.cfg.work.String()}
	if s.sentinel != nil {
		argv = append(argv, "-sentinel", s.sentinel.addr)
	}
	if s.prim == "rwlock" && id == s.r.cfg.clients {
		argv = append(argv, "-reader")
	}
	if c.p, err = startProc(fmt.Sprintf("client %d.%d", id, inst), c.log, nil, argv...); err != nil {
		return err
	}
	s.current[id] = c
	s.insts = append(s.insts, c)
	return nil
}

// waitClients lets the clients finish their last hold and exit by
// themselves, and kills those that do not.
func (s *segment) waitClients() {
	grace := time.Until(s.until) + 3*s.lease + 2*time.Second
	for _, c := range s.insts {
		c.p.signal(sigCont)
		if !c.p.wait(grace) {
			c.p.kill()
		}
		grace = max(0, time.Until(s.until)+3*s.lease+2*time.Second)
	}
}

// keysLeft lists the keys the run left in Redis that never expire, on
// the lock servers (a replica holds copies of its primary's).
func (s *segment) keysLeft(ctx context.Context) ([]string, error) {
	var left []string
	for _, n := range s.nodes {
		keys, err := n.keysWithoutTTL(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", n.addr(), err)
		}
		left = append(left, keys...)
	}
	return left, nil
}

// teardown ends every process of the segment and heals every partition.
// It may run twice.
func (s *segment) teardown() {
	for _, c := range s.insts {
		c.p.kill()
		_ = c.log.Close()
	}
	healAll(s.r.cfg.clients)
	if s.resc != nil {
		s.resc.close()
	}
	if s.res != nil {
		s.res.stop(time.Second)
	}
	s.closeProxies()
	s.sentinel.close()
	s.sentinel = nil
	for _, n := range s.nodes {
		n.close()
	}
	if s.replica != nil {
		s.replica.close()
	}
}

// needsReplica reports whether the segment's first server has a replica:
// for rlock-ack, whose acquisitions wait for it, and for the faults that
// act on replication.
func (s *segment) needsReplica() bool {
	return s.prim == "rlock-ack" || s.uses("failover") || s.uses("replica-partition")
}

// startReplication starts the first server's replica, and for the
// failover fault the Sentinel watching them.
func (s *segment) startReplication(ctx context.Context) error {
	if !s.needsReplica() {
		return nil
	}
	n, err := newRedisNode(serverNodes, filepath.Join(s.dir, "replica"), s.fault == "restart-persist", "")
	if err != nil {
		return err
	}
	s.replica, n.replicaOf = n, s.nodes[0].addr()
	if err := n.start(ctx); err != nil {
		return err
	}
	if err := n.waitInSync(ctx); err != nil {
		return err
	}
	if s.fault == "failover" {
		s.sentinel, err = startSentinel(ctx, s.dir, s.nodes[0], n)
	}
	return err
}
