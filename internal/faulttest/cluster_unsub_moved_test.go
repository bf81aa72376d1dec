package faulttest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyslot"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// subTap sits under a cluster client's connections (its Dialer): it
// records every SSUBSCRIBE written and where to, and can hold back what a
// pub/sub connection reads, so that the hub's reader sees replies late, as
// a busy reader would.
type subTap struct {
	mu     sync.Mutex
	gate   chan struct{}   // while non-nil, reads of pub/sub connections wait for it
	sent   []tappedSub     // every SSUBSCRIBE written, in order
	heldOn map[string]bool // addresses whose pub/sub connection had bytes held back
}

type tappedSub struct{ addr, channel string }

func (tp *subTap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: nc, tap: tp, addr: addr}, nil
}

// hold makes the pub/sub connections' reads wait until the returned
// function is called.
func (tp *subTap) hold() (release func()) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	gate := make(chan struct{})
	tp.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			tp.mu.Lock()
			tp.gate = nil
			tp.mu.Unlock()
			close(gate)
		})
	}
}

// held reports whether a pub/sub connection to addr had bytes held back.
func (tp *subTap) held(addr string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.heldOn[addr]
}

// sentTo returns the addresses an SSUBSCRIBE of a channel starting with
// prefix was written to.
func (tp *subTap) sentTo(prefix string) []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []string
	for _, s := range tp.sent {
		if strings.HasPrefix(s.channel, prefix) {
			out = append(out, s.addr)
		}
	}
	return out
}

// tapConn is one connection under a subTap. It counts as a pub/sub
// connection from its first SSUBSCRIBE on.
type tapConn struct {
	net.Conn
	tap    *subTap
	addr   string
	pubsub atomic.Bool
}

func (c *tapConn) Write(b []byte) (int, error) {
	if chans := ssubscribed(b); len(chans) > 0 {
		c.pubsub.Store(true)
		c.tap.mu.Lock()
		for _, ch := range chans {
			c.tap.sent = append(c.tap.sent, tappedSub{c.addr, ch})
		}
		c.tap.mu.Unlock()
	}
	return c.Conn.Write(b)
}

// Read reads as usual, then, on a pub/sub connection while the tap holds,
// keeps what it read until the hold ends.
func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.pubsub.Load() {
		c.tap.mu.Lock()
		gate := c.tap.gate
		if gate != nil {
			if c.tap.heldOn == nil {
				c.tap.heldOn = make(map[string]bool)
			}
			c.tap.heldOn[c.addr] = true
		}
		c.tap.mu.Unlock()
		if gate != nil {
			<-gate
		}
	}
	return n, err
}

// ssubscribed returns the channels of the SSUBSCRIBE commands in b, a
// write of whole commands; it stops at what it cannot read.
func ssubscribed(b []byte) []string {
	if !bytes.Contains(bytes.ToUpper(b), []byte("SSUBSCRIBE")) {
		return nil
	}
	r := bufio.NewReader(bytes.NewReader(b))
	var out []string
	for {
		args, err := redistest.ReadCommand(r)
		if err != nil {
			return out
		}
		if len(args) > 1 && strings.EqualFold(args[0], "SSUBSCRIBE") {
			out = append(out, args[1:]...)
		}
	}
}

// twoSlotsOnOneMaster returns two lock names whose slots differ and are
// served by the same master, and that master.
func twoSlotsOnOneMaster(t *testing.T, c *redistest.Cluster) (a, b string, owner *redistest.Server) {
	t.Helper()
	base := redistest.UniqueName(t)
	first := map[string]string{} // by master address: a name on it
	for i := range 1000 {
		name := fmt.Sprintf("%s-%d", base, i)
		key := keyspace.NewNames(name).Lock()
		m := c.MasterFor(key)
		prev, ok := first[m.Addr()]
		if !ok {
			first[m.Addr()] = name
			continue
		}
		if keyslot.Of(keyspace.NewNames(prev).Lock()) != keyslot.Of(key) {
			return prev, name, m
		}
	}
	t.Fatal("no two names in different slots of one master")
	return "", "", nil
}

// Redis 7.0 answers a SUNSUBSCRIBE of a channel whose slot has left the
// node with -MOVED, after the push that unsubscribed it: "sunsubscribe A"
// then "-MOVED <slot of A> <new owner>". A hub that has sent SUNSUBSCRIBE A
// and reads that push only afterwards must not take the push for the
// reply and charge the -MOVED to the next command in line, here the
// SSUBSCRIBE of a waiter of another lock on the same node: that waiter's
// channel stays on the node that owns it, and the waiter still holds
// within a second of the release.
func TestClusterMovedSunsubscribeNotChargedToSsubscribe(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := t.Context()
	nameA, nameB, owner := twoSlotsOnOneMaster(t, c)
	keyA, keyB := keyspace.NewNames(nameA).Lock(), keyspace.NewNames(nameB).Lock()
	chansA, chansB := keyspace.NewNames(nameA).Channel(), keyspace.NewNames(nameB).Channel()
	var to *redistest.Server
	for _, s := range c.Masters(t) {
		if s != owner {
			to = s
			break
		}
	}

	holderRDB := c.NewClient(t)
	holdA := rlock.New(holderRDB, nameA, rlock.WithLeaseTime(movesLease))
	holdB := rlock.New(holderRDB, nameB, rlock.WithLeaseTime(movesLease))
	for _, m := range []*rlock.Mutex{holdA, holdB} {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = holdA.Unlock(context.Background()) }()

	tap := &subTap{}
	rdb := c.NewClient(t, func(o *redis.ClusterOptions) { o.Dialer = tap.dial })
	parks := redistest.CountParks(t, rdb)
	onOwner := func(prefix string) func() bool {
		return func() bool {
			return len(slices.DeleteFunc(redistest.ShardChannels(t, owner), func(ch string) bool {
				return !strings.HasPrefix(ch, prefix)
			})) > 0
		}
	}

	// A waiter on A, parked: its channel is subscribed on owner.
	actx, leaveA := context.WithCancel(ctx)
	defer leaveA()
	waitedA := make(chan error, 1)
	go func() { waitedA <- rlock.New(rdb, nameA).Lock(actx) }()
	redistest.WaitFor(t, 5*time.Second, onOwner(chansA))

	// The hub's reader falls behind: A's slot moves (Redis pushes
	// "sunsubscribe A" at once), A's waiter leaves (the hub sends
	// SUNSUBSCRIBE A, answered -MOVED), and a waiter on B subscribes
	// (SSUBSCRIBE B, answered "ssubscribe B"), all before the hub reads
	// the push.
	release := tap.hold()
	defer release()
	c.MigrateSlot(t, keyslot.Of(keyA), to)
	leaveA()
	if err := <-waitedA; err == nil {
		t.Fatal("A's waiter held a lock that was never released")
	}
	waitedB := make(chan error, 1)
	go func() {
		l := rlock.New(rdb, nameB)
		err := l.Lock(ctx)
		if err == nil {
			err = l.Unlock(context.Background())
		}
		waitedB <- err
	}()
	// Once owner lists B's waiter, it has answered SSUBSCRIBE B, and the
	// SUNSUBSCRIBE A written before it.
	redistest.WaitFor(t, 5*time.Second, onOwner(chansB))
	release()
	if !tap.held(owner.Addr()) {
		t.Fatal("the hub read nothing from its connection to the owner while it was behind: no push to mistake")
	}

	// B's waiter parks once its subscription is confirmed. Usually within
	// a second; on a loaded 2-core machine it has taken more than 5s.
	redistest.WaitFor(t, 15*time.Second, func() bool { return parks.N() == 2 })
	if got := tap.sentTo(chansB); slices.ContainsFunc(got, func(addr string) bool { return addr != owner.Addr() }) {
		t.Errorf("SSUBSCRIBE of B's waiter sent to %v, want only %s (owner of B's slot); A's slot moved to %s",
			got, owner.Addr(), to.Addr())
	}
	for _, s := range c.Nodes() {
		if s == owner {
			continue
		}
		for _, ch := range redistest.ShardChannels(t, s) {
			if strings.HasPrefix(ch, chansB) {
				t.Errorf("%s has a subscriber for B's channel %s; B's slot is on %s", s.Addr(), ch, owner.Addr())
			}
		}
	}
	notified := parks.Notified()
	released := time.Now()
	if err := holdB.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	select {
	case err := <-waitedB:
		if err != nil {
			t.Fatalf("B's waiter: %v", err)
		}
		took = time.Since(released)
		if d := took; d > time.Second {
			t.Errorf("B's waiter held %v after the release, want within 1s", d.Round(time.Millisecond))
		}
		if parks.Notified() == notified {
			t.Error("B's waiter was not woken by the release")
		}
	case <-time.After(movesLease):
		t.Fatal("B's waiter did not hold within the holder's lease of the release")
	}
	t.Logf("A (slot %d) moved %s -> %s; B (slot %d) on %s; SSUBSCRIBE of B's waiter sent to %v; B's waiter held %v after the release",
		keyslot.Of(keyA), owner.Addr(), to.Addr(), keyslot.Of(keyB), owner.Addr(), tap.sentTo(chansB), took.Round(time.Millisecond))
}
