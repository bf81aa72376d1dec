// Package hub multiplexes the wake-up notifications of every redisync
// waiter of one Redis client over one pub/sub connection (on a cluster,
// one per primary).
//
// A Hub subscribes a channel on the first Subscribe and unsubscribes it when
// the last Subscription on it closes. One goroutine per connection reads
// messages and never blocks: a wake-up is a signal on a one-slot channel, so
// repeated wake-ups of a waiter that has not run yet coalesce into one.
//
// Messages carry how many units are free: "1" wakes one local waiter (a
// mutex was released), "n" wakes waiters in line whose needs fit in n
// (permits are available), "-1" wakes all (a write lock was released to
// readers). "h<token>:<hold id>", on a waiter's own channel, is a grant:
// the publisher made that waiter the holder (see Subscription.Granted).
// A waiter needs one unit unless it subscribed with
// SubscribeNeeding or JoinNeeding: a semaphore waiter for 4 permits is
// skipped by a message announcing 1, which wakes the next waiter that
// wants 1 instead. Waiters already holding an unread wake-up are skipped,
// so a message never wakes more waiters than it can serve.
// After the connection is re-established, every waiter is woken at once,
// because messages published while it was down are lost.
//
// With sharded set (Redis Cluster 7+), channels are subscribed with
// SSUBSCRIBE on the primary that owns their slot, over one connection per
// primary that owns a slot somebody waits on (node.go). When a channel's
// slot moves (resharding, failover) the hub follows it to its new owner,
// and wakes the channel's waiters both when the subscription lapses and
// when it is confirmed again, since a release published in between was
// heard by nobody. Without sharding there is one connection for the whole
// client.
//
// A Hub runs goroutines only while a Subscription is open, and for a short
// linger (Linger) after the last one closes: a waiter that comes back
// within it reuses the connection instead of dialling again, and closing
// the connection stays off the waiter's return path. Without sharding a
// channel lingers too: the last Subscription's Close leaves it subscribed
// for Linger, so that a waiter of the same channel coming back within it
// joins it without a SUBSCRIBE and its confirmation (a mutex's waiter on
// its own channel, Lock after Lock), and no UNSUBSCRIBE is written on
// the waiter's return path. A message that reaches a lingering channel
// reaches nobody; one read by a later waiter that joined it was maybe
// published for an earlier one (a wake-up then costs one attempt, and a
// grant names the hold id and the attempt it answers).
//
// Where subscriptions are refused (poll.go), a client's waiters poll. The
// decision is the client's, not a waiter's or a handle's: the hub is per
// client, and so is what refuses (a proxy in front of the server, the
// ACL user the client logs in as). It is found once in the client's life,
// from the hub's first subscription: an error reply of NOPERM or "unknown
// command", or, before any confirmation, the connection closed twice by
// the other end while a PING on the client's ordinary connections
// answers (twemproxy closes the connection on a command it does not
// know). Poll (a primitive's WithoutPubSub) sets it without a refused
// subscription. Its waiters then ask Redis every Jittered interval;
// releases still publish (with redis.pcall, which a refusal cannot fail)
// and still grant the lock to the first waiter in line in Redis, where
// the waiter's next attempt finds it.
package hub

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Linger is how long an idle connection stays open after its last
// subscription closed. It is short enough that nothing of the hub is left
// running soon after the last waiter is gone.
const Linger = 100 * time.Millisecond

// Hub is the subscription hub of one Redis client. It is safe for concurrent
// use.
type Hub struct {
	rdb     redis.UniversalClient
	sharded bool
	mode    *mode // whether its waiters poll instead (see Polls)

	mu   sync.Mutex // protects everything below and every conn's, node's and channel's tables
	conn *conn      // unsharded: the connection, while open or lingering

	// Sharded only.
	cluster *redis.ClusterClient
	chans   map[string]*channel // every subscribed channel, placed on a node or being placed
	nodes   map[string]*node    // by address: the live connection to each primary
	// slotsCheckedAt is when followSlots last compared the channels'
	// nodes with the cluster's slot map.
	slotsCheckedAt time.Time
}

// New returns a hub for rdb. It does no I/O. With sharded set, channels are
// subscribed with SSUBSCRIBE (Redis Cluster 7+); rdb must then be a
// *redis.ClusterClient.
func New(rdb redis.UniversalClient, sharded bool) *Hub {
	if rdb == nil {
		panic("pubsub: New with nil redis client")
	}
	h := &Hub{rdb: rdb, sharded: sharded, mode: modeOf(rdb)}
	if sharded {
		cc, ok := rdb.(*redis.ClusterClient)
		if !ok {
			panic(errNotCluster.Error())
		}
		h.cluster = cc
		h.chans = make(map[string]*channel)
		h.nodes = make(map[string]*node)
	}
	return h
}

// Subscription is one waiter's interest in one channel.
type Subscription struct {
	hub  *Hub
	conn *conn
	ch   *channel
	c    chan struct{}
	need int // the free units it needs to proceed
	// units is how many free units the message that last woke it still
	// had when it reached it (its own need included; 0 after a wake-all),
	// guarded by hub.mu: a waiter that leaves without using the wake-up
	// passes them on.
	units int
	// hasMessage and message record a message (see Message), guarded by
	// hub.mu.
	hasMessage bool
	message    string
	parked     time.Time // see Parked; guarded by hub.mu
	once       sync.Once
}

// C returns the channel on which the waiter is woken. Wake-ups coalesce: a
// receive may stand for several notifications.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Subscribe registers interest in channel and returns once Redis has
// confirmed the subscription, so that a notification published after
// Subscribe returns is not missed. On error or when ctx ends first, nothing
// is left subscribed.
func (h *Hub) Subscribe(ctx context.Context, name string) (*Subscription, error) {
	return h.SubscribeNeeding(ctx, name, 1)
}

// SubscribeNeeding is Subscribe for a waiter that can proceed only when a
// message announces at least need free units (need >= 1).
//
// On a client whose waiters poll (see Polls) it returns ErrRefused at
// once, and also when the server refuses the subscription while the
// waiter waits for its confirmation.
func (h *Hub) SubscribeNeeding(ctx context.Context, name string, need int) (*Subscription, error) {
	if h.Polls() {
		return nil, ErrRefused
	}
	if h.sharded {
		return h.subscribeSharded(ctx, name, need)
	}
	h.mu.Lock()
	c := h.conn
	if c == nil {
		c = newConn(h)
		h.conn = c
	}
	ch := c.channels[name]
	fresh := ch == nil
	if fresh {
		ch = newChannel(name)
		c.channels[name] = ch
	}
	s := h.addLocked(c, ch, need)
	confirmed := ch.confirmed
	h.mu.Unlock()

	if fresh {
		c.subscribe(ch)
	}
	return s.await(ctx, confirmed)
}

// await returns s once confirmed is closed, or closes it when ctx ends
// first.
func (s *Subscription) await(ctx context.Context, confirmed <-chan struct{}) (*Subscription, error) {
	select {
	case <-confirmed:
		return s, nil
	case <-s.hub.mode.refusedC:
		s.Close()
		return nil, ErrRefused
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

// Join is Subscribe for a channel that is already subscribed and confirmed
// for another waiter of the hub: it registers interest without I/O and
// returns at once. It returns nil when the channel is not subscribed yet,
// or its subscription is not confirmed yet; the caller then subscribes with
// Subscribe. A waiter that joins before its first attempt needs no second
// one: a notification published after Join returns reaches it.
func (h *Hub) Join(name string) *Subscription { return h.JoinNeeding(name, 1) }

// JoinNeeding is Join for a waiter that needs need units (see
// SubscribeNeeding).
func (h *Hub) JoinNeeding(name string, need int) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	var c *conn
	var ch *channel
	if h.sharded {
		ch = h.chans[name]
	} else if c = h.conn; c != nil {
		ch = c.channels[name]
	}
	if ch == nil || !ch.isConfirmed {
		return nil
	}
	return h.addLocked(c, ch, need)
}

// addLocked appends a waiter needing need units to ch's line (on c when
// unsharded, nil when sharded). h.mu must be held.
func (h *Hub) addLocked(c *conn, ch *channel, need int) *Subscription {
	s := &Subscription{hub: h, conn: c, ch: ch, c: make(chan struct{}, 1), need: max(need, 1)}
	ch.subs = append(ch.subs, s)
	ch.idleSince = time.Time{}
	return s
}

// Message reports, once, whether a message other than a count of free
// units reached the waiter on a confirmed subscription since it last
// asked, and its payload. The hub does not read it: on a waiter's own
// channel it is what the publisher says to that waiter (a lock's grant,
// see package script's ParseGrant).
func (s *Subscription) Message() (string, bool) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	p, ok := s.message, s.hasMessage
	s.message, s.hasMessage = "", false
	return p, ok
}

// Parked records when the waiter's last attempt, refused without error
// and followed by no other, was sent; the zero time when its last attempt
// was not such. Deliver reads it.
func (s *Subscription) Parked(at time.Time) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.parked = at
}

// Deliver gives the waiter on channel name, if this hub has one, the
// message payload of a release sent at sent, as a published message would: the
// in-process handoff, without waiting for the message. It is accepted
// only by a waiter on a confirmed subscription that parked (see Parked)
// before sent: a later wait of the same waiter sent all its attempts
// after the grant was made, so a late delivery never reaches it. It
// reports whether a waiter accepted it.
func (h *Hub) Deliver(name string, payload string, sent time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ch *channel
	if h.sharded {
		ch = h.chans[name]
	} else if c := h.conn; c != nil {
		ch = c.channels[name]
	}
	if ch == nil || !ch.isConfirmed || len(ch.subs) == 0 {
		return false
	}
	if s := ch.subs[0]; !s.parked.IsZero() && s.parked.Before(sent) {
		messageLocked(ch, payload)
		return true
	}
	return false
}

// Close ends the subscription. A wake-up the waiter received but did not act
// on is passed to another waiter on the same channel, so that leaving cannot
// swallow a notification. Close is idempotent.
func (s *Subscription) Close() { s.close(false) }

// CloseConsumed is Close for a waiter that took a wake-up from C and left
// without acting on it: the wake-up is passed on as if still pending.
func (s *Subscription) CloseConsumed() { s.close(true) }

func (s *Subscription) close(consumed bool) {
	s.once.Do(func() {
		h, c, ch := s.hub, s.conn, s.ch
		h.mu.Lock()
		for i, o := range ch.subs {
			if o == s {
				ch.subs = append(ch.subs[:i], ch.subs[i+1:]...)
				break
			}
		}
		select {
		case <-s.c:
			consumed = true
		default:
		}
		if consumed {
			// Pass on what the waiter was woken for, at least its need:
			// the waiters passed over for it may fit now.
			wakeLocked(ch, max(s.units, s.need))
		}
		if h.sharded {
			n, sent := h.dropLocked(ch)
			h.mu.Unlock()
			if sent {
				n.unsubscribe(ch.name)
			}
			return
		}
		if len(ch.subs) == 0 && c.channels[ch.name] == ch {
			// The channel lingers (see the package doc); reap
			// unsubscribes it unless a waiter comes back.
			ch.idleSince = time.Now()
			c.lingerLocked()
		}
		h.mu.Unlock()
	})
}

// reap unsubscribes the channels of c that have had no waiter for Linger,
// and closes c when none is left. It runs on the linger timer's
// goroutine, which waits for the reader to return, and arms the timer
// again for a channel that lingers still.
func (h *Hub) reap(c *conn) {
	h.mu.Lock()
	c.reaping = false
	now := time.Now()
	var drop []*channel
	next := time.Duration(-1)
	for name, ch := range c.channels {
		if len(ch.subs) > 0 || ch.idleSince.IsZero() {
			continue
		}
		if left := Linger - now.Sub(ch.idleSince); left > 0 {
			if next < 0 || left < next {
				next = left
			}
			continue
		}
		delete(c.channels, name)
		drop = append(drop, ch)
	}
	idle := len(c.channels) == 0 && h.conn == c
	switch {
	case idle:
		h.conn = nil
	case next >= 0:
		c.reaping = true
		c.reaper.Reset(next)
	}
	h.mu.Unlock()
	if idle {
		c.stop() // its channels go with it
		return
	}
	for _, ch := range drop {
		c.unsubscribe(ch)
	}
}

// channel is one subscribed channel and its waiters in arrival order. All
// fields are guarded by the hub's mu.
type channel struct {
	name      string
	subs      []*Subscription
	idleSince time.Time // unsharded: when its last waiter left; zero while it has one
	// confirmed is closed when Redis confirmed the subscription; a lapsed
	// subscription (cluster: its slot moved or its node failed) gets a new
	// one, closed when the subscription is confirmed again.
	confirmed   chan struct{}
	isConfirmed bool

	// Sharded only.
	node      *node // the node it is placed on; nil while being placed
	sent      bool  // its SSUBSCRIBE was written to node's connection
	redirects int   // MOVED replies followed since it was last confirmed
	lapsed    bool  // it lost a confirmed subscription and is not confirmed again yet
}

func newChannel(name string) *channel {
	return &channel{name: name, confirmed: make(chan struct{})}
}

// confirm records Redis's confirmation of the subscription. The waiters of
// a channel whose subscription had lapsed are woken, since what was
// published meanwhile reached nobody.
func (ch *channel) confirm() {
	if ch.isConfirmed {
		return
	}
	ch.isConfirmed = true
	close(ch.confirmed)
	if ch.lapsed {
		ch.lapsed = false
		wakeLocked(ch, -1)
	}
}

// lapse records that ch is no longer subscribed anywhere.
func (ch *channel) lapse() {
	if ch.isConfirmed {
		ch.isConfirmed = false
		ch.confirmed = make(chan struct{})
	}
	ch.lapsed = true
}

// notifyLocked delivers a message published on ch: a count of free
// units, or any other payload, which is the message of the channel's
// first waiter (its own channel). h.mu must be held.
func notifyLocked(ch *channel, payload string) {
	if n, ok := wakeCount(payload); ok {
		wakeLocked(ch, n)
		return
	}
	messageLocked(ch, payload)
}

// messageLocked gives the first waiter on ch the message payload. h.mu
// must be held.
func messageLocked(ch *channel, payload string) {
	if len(ch.subs) == 0 {
		return
	}
	// A waiter's own channel: the message is its, and it is woken whether
	// or not a wake-up is pending already. A message read before the
	// subscription was confirmed was published to an earlier one, a wait
	// that has ended: it only wakes.
	s := ch.subs[0]
	if ch.isConfirmed {
		s.hasMessage, s.message = true, payload
	}
	select {
	case s.c <- struct{}{}:
		s.units = 1
	default:
	}
}

// wakeLocked wakes, in line order, the waiters of ch that hold no unread
// wake-up and whose needs fit in n free units, each taking its need from
// n; all of them when n < 0. h.mu must be held.
func wakeLocked(ch *channel, n int) {
	for _, s := range ch.subs {
		if n == 0 {
			return
		}
		if n > 0 && s.need > n {
			continue // cannot proceed on what is free; one that needs less may
		}
		select {
		case s.c <- struct{}{}:
			s.units = max(n, 0)
			if n > 0 {
				n -= s.need
			}
		default:
			// Already woken and not yet running: it will try anyway.
		}
	}
}
