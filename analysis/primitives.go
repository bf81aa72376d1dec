package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// The primitives under test, in the order the harness runs them.
var primitives = []string{"rlock-unfenced", "rlock", "rlock-ack", "fairlock", "rwlock", "leased", "quorum"}

// servers is how many independent redis-servers a primitive locks on.
func servers(primitive string) int {
	if primitive == "quorum" {
		return 3
	}
	return 1
}

// fenced reports whether the primitive's holds carry fencing tokens.
func fenced(primitive string) bool {
	return primitive != "rlock-unfenced" && primitive != "leased"
}

// A locker is one client's hold on the primitive under test.
type locker interface {
	acquire(ctx context.Context) error
	release(ctx context.Context) error
	// done is closed when the current hold ends (the library's Done).
	done() <-chan struct{}
	// tokens are the current hold's fencing tokens (none when unfenced).
	tokens() tokens
	// mode is the hold's kind for the checker: "w" exclusive, "r" shared,
	// "p" one of a semaphore's permits.
	mode() string
}

// lockerConfig is what a client knows about the primitive under test.
type lockerConfig struct {
	primitive string
	name      string
	lease     time.Duration
	reader    bool // rwlock: this client takes read holds
	rdbs      []*redis.Client
}

func newLocker(c lockerConfig) (locker, error) {
	switch c.primitive {
	case "rlock", "rlock-unfenced", "rlock-ack":
		opts := []rlock.Option{rlock.WithWatchdogTimeout(c.lease)}
		if c.primitive != "rlock-unfenced" {
			opts = append(opts, rlock.WithFencing())
		}
		if c.primitive == "rlock-ack" {
			// Every acquisition waits for the replica (the segment
			// gives the first server one).
			opts = append(opts, rlock.WithReplicaAck(1, ackTimeout))
		}
		m := rlock.New(c.rdbs[0], c.name, opts...)
		return &mutexLocker{Locker: m, token: m.Token}, nil
	case "fairlock":
		m := fairlock.New(c.rdbs[0], c.name, fairlock.WithFencing(), fairlock.WithWatchdogTimeout(c.lease),
			fairlock.WithWaiterTimeout(c.lease))
		return &mutexLocker{Locker: m, token: m.Token}, nil
	case "rwlock":
		rw := rwlock.New(c.rdbs[0], c.name, rwlock.WithFencing(), rwlock.WithWatchdogTimeout(c.lease))
		if c.reader {
			return &readLocker{rw: rw}, nil
		}
		return &mutexLocker{Locker: rw, token: rw.Token}, nil
	case "leased":
		return &permitLocker{l: semaphore.NewLeased(c.rdbs[0], c.name, semaphore.WithWatchdogTimeout(c.lease))}, nil
	case "quorum":
		return newQuorumLocker(c), nil
	}
	return nil, fmt.Errorf("unknown primitive %q", c.primitive)
}

// mutexLocker is a lock with one fencing token, or none: rlock, fairlock,
// an rwlock writer.
type mutexLocker struct {
	multilock.Locker
	token func() uint64
}

func (m *mutexLocker) acquire(ctx context.Context) error { return m.Lock(ctx) }
func (m *mutexLocker) release(ctx context.Context) error { return m.Unlock(ctx) }
func (m *mutexLocker) done() <-chan struct{}             { return m.Done() }
func (m *mutexLocker) mode() string                      { return "w" }
func (m *mutexLocker) tokens() tokens {
	if t := m.token(); t != 0 {
		return tokens{0: t}
	}
	return tokens{}
}

// readLocker is an rwlock reader: shared holds, no token.
type readLocker struct{ rw *rwlock.RWMutex }

func (r *readLocker) acquire(ctx context.Context) error { return r.rw.RLock(ctx) }
func (r *readLocker) release(ctx context.Context) error { return r.rw.RUnlock(ctx) }
func (r *readLocker) done() <-chan struct{}             { return r.rw.Done() }
func (r *readLocker) tokens() tokens                    { return tokens{} }
func (r *readLocker) mode() string                      { return "r" }

// permitLocker holds one permit of a leased semaphore, kept alive by the
// watchdog (lease 0).
type permitLocker struct {
	l  *semaphore.Leased
	id string
}

func (p *permitLocker) acquire(ctx context.Context) error {
	id, err := p.l.Acquire(ctx, 0)
	p.id = id
	return err
}

func (p *permitLocker) release(ctx context.Context) error { return p.l.Release(ctx, p.id) }
func (p *permitLocker) done() <-chan struct{}             { return p.l.Done(p.id) }
func (p *permitLocker) tokens() tokens                    { return tokens{} }
func (p *permitLocker) mode() string                      { return "p" }

// quorumLocker is a Redlock-style quorum over the same name on three
// independent servers, each member fenced by its own server's counter.
type quorumLocker struct {
	g       *multilock.Group
	members []*rlock.Mutex
}

func newQuorumLocker(c lockerConfig) *quorumLocker {
	q := &quorumLocker{}
	var ls []multilock.Locker
	for _, rdb := range c.rdbs {
		m := rlock.New(rdb, c.name, rlock.WithFencing(), rlock.WithWatchdogTimeout(c.lease))
		q.members = append(q.members, m)
		ls = append(ls, m)
	}
	q.g = multilock.NewQuorum(ls...)
	return q
}

func (q *quorumLocker) acquire(ctx context.Context) error { return q.g.Lock(ctx) }
func (q *quorumLocker) release(ctx context.Context) error { return q.g.Unlock(ctx) }
func (q *quorumLocker) done() <-chan struct{}             { return q.g.Done() }
func (q *quorumLocker) mode() string                      { return "w" }

// tokens are those of the members held: a majority of them.
func (q *quorumLocker) tokens() tokens {
	t := tokens{}
	for i, m := range q.members {
		if v := m.Token(); v != 0 {
			t[i] = v
		}
	}
	return t
}
