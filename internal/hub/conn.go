package hub

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// healthInterval is how long the reader waits for traffic before it
	// pings; a ping unanswered for another interval means the connection is
	// dead even if TCP has not noticed, and it is replaced.
	healthInterval = 2 * time.Second
	// retryInterval paces reconnection attempts while Redis is unreachable.
	retryInterval = 100 * time.Millisecond
)

// conn is the pub/sub connection of an unsharded hub (standalone Redis,
// Sentinel) and the goroutine that reads it. It is a go-redis PubSub: one
// connection carries every channel, and go-redis's own reconnection, which
// subscribes them all again in one command, suits it.
type conn struct {
	hub *Hub

	// Guarded by hub.mu.
	channels     map[string]*channel
	pendingUnsub map[string]int // UNSUBSCRIBEs sent but not yet confirmed
	confirmed    bool           // the server confirmed a subscription once

	// Guarded by hub.mu: reaper unsubscribes channels without waiters for
	// Linger and closes the connection once it has none (Hub.reap);
	// reaping is set while it is armed.
	reaper  *time.Timer
	reaping bool

	wmu     sync.Mutex     // serializes subscription writes, ps swaps and start/stop
	writers sync.WaitGroup // goroutines of subscribe (see Hub.SubscribeNeeding)
	ps      *redis.PubSub
	started bool
	stopped bool

	ctx    context.Context // cancelled by stop; every pub/sub call uses it
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

func newConn(h *Hub) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		hub:          h,
		channels:     make(map[string]*channel),
		pendingUnsub: make(map[string]int),
		ctx:          ctx,
		cancel:       cancel,
		done:         make(chan struct{}),
	}
}

// newPubSub creates the go-redis PubSub without I/O: go-redis dials on the
// first subscription, which is why the reader starts only after it.
func (c *conn) newPubSub() *redis.PubSub { return c.hub.rdb.Subscribe(c.ctx) }

// subscribe writes SUBSCRIBE for ch, a channel new to c, on a goroutine
// of its own: the write may have to dial, and go-redis bounds a dial and
// its handshake by its own timeouts, not by a ctx, so a waiter whose
// deadline comes first must not wait for it (nor those behind it).
// go-redis keeps the channel on its list even if the write fails, and
// subscribes it on the next connection.
func (c *conn) subscribe(ch *channel) {
	c.writers.Add(1)
	go func() {
		defer c.writers.Done()
		c.write(ch)
	}()
}

func (c *conn) write(ch *channel) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h := c.hub
	h.mu.Lock()
	current := c.channels[ch.name] == ch
	h.mu.Unlock()
	if !current || c.stopped {
		return
	}
	if c.ps == nil {
		c.ps = c.newPubSub()
	}
	c.subscribeLocked(ch.name)
	if !c.started {
		c.started = true
		c.hub.opened()
		go c.run(c.ps)
	}
}

// subscribeLocked writes SUBSCRIBE for names; c.wmu must be held. A
// write that fails on a broken connection makes go-redis reconnect within
// the call and subscribe again the channels it knew before it: not names,
// which it adds to its list only afterwards. So a failed write is sent
// once more, on the new connection; should that fail too, the next
// reconnection subscribes names, on the list by then. An error is not
// reported further: the waiter is bounded by its own timer meanwhile.
func (c *conn) subscribeLocked(names ...string) {
	if err := c.ps.Subscribe(c.ctx, names...); err != nil && c.ctx.Err() == nil {
		_ = c.ps.Subscribe(c.ctx, names...)
	}
}

func (c *conn) unsubscribe(ch *channel) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h := c.hub
	h.mu.Lock()
	resubscribed := c.channels[ch.name] != nil
	if !resubscribed {
		c.pendingUnsub[ch.name]++
	}
	h.mu.Unlock()
	if resubscribed || c.stopped || c.ps == nil {
		return
	}
	_ = c.ps.Unsubscribe(c.ctx, ch.name)
}

// lingerLocked arms the reaper for a channel whose last waiter just left,
// unless it is armed already (for an earlier one, which it will find
// first). hub.mu must be held.
func (c *conn) lingerLocked() {
	if c.reaping {
		return
	}
	c.reaping = true
	if c.reaper == nil {
		c.reaper = time.AfterFunc(Linger, func() { c.hub.reap(c) })
		return
	}
	c.reaper.Reset(Linger)
}

// stop closes the connection and waits for its reader and writers to
// return.
func (c *conn) stop() {
	c.cancel() // first: a write in flight ends, and waiting writers give up
	c.wmu.Lock()
	c.stopped = true
	if c.ps != nil {
		_ = c.ps.Close()
	}
	started := c.started
	c.wmu.Unlock()
	c.writers.Wait()
	if started {
		<-c.done
		c.hub.closed()
	}
}

// replace swaps in a fresh connection subscribed to every current channel,
// for a connection that stopped answering.
func (c *conn) replace() *redis.PubSub {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.stopped {
		return c.ps
	}
	h := c.hub
	h.mu.Lock()
	names := make([]string, 0, len(c.channels))
	for name := range c.channels {
		names = append(names, name)
	}
	clear(c.pendingUnsub)
	h.mu.Unlock()
	_ = c.ps.Close()
	c.ps = c.newPubSub()
	if len(names) > 0 {
		c.subscribeLocked(names...)
	}
	return c.ps
}

// run reads the connection until stop. It never blocks on a waiter.
func (c *conn) run(ps *redis.PubSub) {
	defer close(c.done)
	retry := time.NewTimer(0)
	<-retry.C
	defer retry.Stop()
	broken, pinged := false, false
	var refusal refusal // until the first confirmation
	for {
		msg, err := ps.ReceiveTimeout(c.ctx, healthInterval)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil && !c.confirmedOnce() && refusal.refused(c.ctx, c.hub.rdb, err) {
			// The server or a proxy refuses subscriptions: its waiters
			// poll from now on (they give up their subscriptions, and
			// the connection goes once they have).
			c.hub.markRefused()
		}
		switch {
		case err == nil:
		case isTimeout(err) && !pinged:
			pinged = true
			_ = ps.Ping(c.ctx)
			continue
		case isTimeout(err):
			// Two silent intervals: the peer is gone without TCP noticing.
			ps = c.replace()
			fallthrough
		default:
			// go-redis reconnects on the next receive; pace the attempts
			// and forget confirmations that died with the connection.
			broken, pinged = true, false
			c.hub.mu.Lock()
			clear(c.pendingUnsub)
			c.hub.mu.Unlock()
			retry.Reset(retryInterval)
			select {
			case <-retry.C:
			case <-c.ctx.Done():
				return
			}
			continue
		}
		pinged = false
		if broken {
			// Messages published while we were away are lost: every waiter
			// retries at once.
			broken = false
			c.hub.reconnected()
			c.wakeAll()
		}
		c.dispatch(msg)
	}
}

func (c *conn) dispatch(msg any) {
	h := c.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Subscription:
		switch m.Kind {
		case "subscribe":
			c.confirmed = true
			if c.pendingUnsub[m.Channel] > 0 {
				return // the confirmation of a subscription since dropped
			}
			if ch := c.channels[m.Channel]; ch != nil {
				ch.confirm()
			}
		case "unsubscribe":
			if c.pendingUnsub[m.Channel] > 0 {
				c.pendingUnsub[m.Channel]--
			}
		}
	case *redis.Message:
		if ch := c.channels[m.Channel]; ch != nil {
			notifyLocked(ch, m.Payload)
		}
	}
}

// confirmedOnce reports whether the server ever confirmed a subscription
// of c: after that, an error is a fault of the connection, not a refusal.
func (c *conn) confirmedOnce() bool {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	return c.confirmed
}

func (c *conn) wakeAll() {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	for _, ch := range c.channels {
		wakeLocked(ch, -1)
	}
}

// wakeCount decodes a count of free units: how many waiters may proceed,
// -1 for all (0 wakes one, the safe minimum). It reports false for a
// payload that is no number: a message (see Subscription.Message).
func wakeCount(payload string) (int, bool) {
	n, err := strconv.Atoi(payload)
	if err != nil {
		return 0, false
	}
	if n == 0 {
		return 1, true
	}
	return n, true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
