package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The replication group of the failover faults: the first lock server is
// a primary with one replica (asynchronous replication, as Redis always
// replicates) and one Sentinel watching it. One Sentinel is enough to
// show what a failover does to the clients' locks; Sentinel's own
// agreement among several is not what is under test, and each extra
// Sentinel adds seconds of discovery to every segment.
const (
	masterName = "analysis"
	// downAfter is how long the primary must be unreachable before the
	// Sentinel fails it over. With the second or so the promotion takes,
	// it outlasts the grant lease (3s), the longest lease the replica
	// can have copied before the cut: the clients that move to the new
	// primary find the lock free there while a holder still inside on the
	// old primary believes it holds. A shorter one lets a grant copied to
	// the replica keep them out until that holder is done.
	downAfter = 2500 * time.Millisecond
	// failoverTimeout bounds a failover's steps; the Sentinel waits twice
	// as long before it fails the same group over again, which bounds how
	// often the nemesis can inject the fault.
	failoverTimeout = 2 * time.Second
	// ackTimeout is how long an rlock-ack acquisition waits for the
	// replica's acknowledgement.
	ackTimeout = 250 * time.Millisecond
)

// A sentinel is the Sentinel process of a segment, on the Sentinel's
// address of the Redis bridge.
type sentinel struct {
	addr string
	proc *proc
	log  *os.File
}

// startSentinel starts a Sentinel watching primary and waits until it
// knows the replica.
func startSentinel(ctx context.Context, dir string, primary, replica *redisNode) (*sentinel, error) {
	port, err := freePort(sentinelIP)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "sentinel.conf")
	host, _, _ := net.SplitHostPort(primary.addr())
	// bind-source-addr: the Sentinel's own connections leave from its
	// address too, so that a cut of that address cuts them.
	text := fmt.Sprintf("port %d\nbind %s\nbind-source-addr %[2]s\nprotected-mode no\ndir %s\n", port, sentinelIP, dir) +
		fmt.Sprintf("sentinel monitor %s %s %d 1\n", masterName, host, primary.port) +
		fmt.Sprintf("sentinel down-after-milliseconds %s %d\n", masterName, downAfter.Milliseconds()) +
		fmt.Sprintf("sentinel failover-timeout %s %d\n", masterName, failoverTimeout.Milliseconds()) +
		fmt.Sprintf("sentinel parallel-syncs %s 1\n", masterName)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "sentinel.log"))
	if err != nil {
		return nil, err
	}
	p, err := startProc("redis-sentinel", log, nil, sentinelArgv(conf)...)
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	s := &sentinel{addr: net.JoinHostPort(sentinelIP, strconv.Itoa(port)), proc: p, log: log}
	if err := s.waitReplica(ctx, replica.addr()); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// sentinelArgv is the command that runs a Sentinel on conf: redis-sentinel
// where it is installed (Debian ships it as a package of its own), else
// redis-server in Sentinel mode, the same program (redis-sentinel is
// redis-server under another name) with the same configuration.
func sentinelArgv(conf string) []string {
	if _, err := exec.LookPath("redis-sentinel"); err == nil {
		return []string{"redis-sentinel", conf}
	}
	return []string{"redis-server", conf, "--sentinel"}
}

func (s *sentinel) client() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.addr, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, MaxRetries: -1})
}

// waitReplica waits until the Sentinel lists the replica as up.
func (s *sentinel) waitReplica(ctx context.Context, replica string) error {
	sc := s.client()
	defer sc.Close()
	deadline := time.Now().Add(15 * time.Second)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		reps, err := sc.Replicas(ctx, masterName).Result()
		last = fmt.Sprint(reps, err)
		for _, r := range reps {
			if r["name"] == replica && r["flags"] == "slave" && r["master-link-status"] == "ok" {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the sentinel does not know the replica %s: %s (log %s)", replica, last, s.log.Name())
}

// master is the address the Sentinel names as the primary.
func (s *sentinel) master(ctx context.Context) (string, error) {
	sc := s.client()
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, masterName).Result()
	if err != nil {
		return "", err
	}
	if len(a) != 2 {
		return "", fmt.Errorf("GET-MASTER-ADDR-BY-NAME: %v", a)
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

func (s *sentinel) close() {
	if s == nil {
		return
	}
	s.proc.kill()
	_ = s.log.Close()
}

// failover isolates the primary from the Sentinel and the replica while
// the clients still reach it, the split brain of a real partition: the
// Sentinel promotes the replica, which has every write replicated before
// the cut and none after, and the clients move to it once the Sentinel
// tells them. Then the cut heals, the old primary is made a replica of
// the new one (as the Sentinel would, some seconds later), and the two
// swap roles in the segment.
func (s *segment) failover(ctx context.Context) string {
	old, rep := s.nodes[0], s.replica
	for _, addr := range []string{sentinelIP, serverIP(rep.k)} {
		if err := blackhole(serverNS(old.k), addr, true); err != nil {
			return "error: " + err.Error()
		}
	}
	cut := time.Now()
	promoted := false
	for time.Since(cut) < 15*time.Second && ctx.Err() == nil {
		if m, err := s.sentinel.master(ctx); err == nil && m == rep.addr() {
			promoted = true
			break
		}
		sleep(ctx, 50*time.Millisecond)
	}
	took := time.Since(cut)
	// The clients learn of the switch from the Sentinel; the old primary
	// keeps serving whoever has not heard of it yet until the cut heals.
	sleep(ctx, splitAfterPromotion)
	for _, addr := range []string{sentinelIP, serverIP(rep.k)} {
		_ = blackhole(serverNS(old.k), addr, false)
	}
	if !promoted {
		return fmt.Sprintf("error: no failover within %v", took.Round(time.Millisecond))
	}
	if err := demote(ctx, old, rep); err != nil {
		return "error: " + err.Error()
	}
	s.nodes[0], s.replica = rep, old
	return fmt.Sprintf("primary %s cut off, %s promoted after %v", old.addr(), rep.addr(), took.Round(time.Millisecond))
}

// splitAfterPromotion is how long the old primary stays cut off from the
// Sentinel and the replica after the promotion, reachable by the clients.
const splitAfterPromotion = 500 * time.Millisecond

// demote makes n a replica of primary and waits until it is in sync.
func demote(ctx context.Context, n, primary *redisNode) error {
	rdb := n.client()
	defer rdb.Close()
	host, port, _ := net.SplitHostPort(primary.addr())
	if err := rdb.ReplicaOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("REPLICAOF on %s: %w", n.addr(), err)
	}
	n.replicaOf, primary.replicaOf = primary.addr(), ""
	return n.waitInSync(ctx)
}

// waitInSync waits until the replica n reports its link to the primary up.
func (n *redisNode) waitInSync(ctx context.Context) error {
	rdb := n.client()
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err := rdb.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		last = fmt.Sprint(err)
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replica %s not in sync: %s", n.addr(), last)
}

// cutReplica cuts the primary and its replica apart for d, then heals
// the cut; the Sentinel, the harness and the clients still reach both, so
// nobody fails anything over. An acknowledged acquisition cannot be
// acknowledged meanwhile.
func (s *segment) cutReplica(ctx context.Context, d time.Duration) string {
	p, r := s.nodes[0], s.replica
	pairs := [][2]string{{serverNS(p.k), serverIP(r.k)}, {serverNS(r.k), serverIP(p.k)}}
	for _, pr := range pairs {
		if err := blackhole(pr[0], pr[1], true); err != nil {
			return "error: " + err.Error()
		}
	}
	sleep(ctx, d)
	var errs []error
	for _, pr := range pairs {
		errs = append(errs, blackhole(pr[0], pr[1], false))
	}
	if err := errors.Join(errs...); err != nil {
		return "error: " + err.Error()
	}
	if err := r.waitInSync(ctx); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s and its replica %s", p.addr(), r.addr())
}
