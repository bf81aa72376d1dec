package hub

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyslot"
)

// lookupTimeout bounds asking the client which primary owns a slot, which
// loads the client's slot map when it has none yet.
const lookupTimeout = 5 * time.Second

// subscribeSharded is SubscribeNeeding on a cluster.
func (h *Hub) subscribeSharded(ctx context.Context, name string, need int) (*Subscription, error) {
	h.mu.Lock()
	ch := h.chans[name]
	fresh := ch == nil
	if fresh {
		ch = newChannel(name)
		h.chans[name] = ch
	}
	s := h.addLocked(nil, ch, need)
	confirmed := ch.confirmed
	h.mu.Unlock()

	if fresh {
		h.place(ctx, []*channel{ch})
	}
	return s.await(ctx, confirmed)
}

// dropLocked forgets ch once its last waiter left, and reports the node
// on whose connection it must be unsubscribed, if any. h.mu must be held.
func (h *Hub) dropLocked(ch *channel) (n *node, sent bool) {
	if len(ch.subs) > 0 || h.chans[ch.name] != ch {
		return nil, false
	}
	delete(h.chans, ch.name)
	n, sent = ch.node, ch.sent
	if n == nil {
		return nil, false
	}
	delete(n.channels, ch.name)
	ch.node, ch.sent = nil, false
	if len(n.channels) == 0 && !n.dead {
		n.lingerLocked()
	}
	return n, sent
}

// place subscribes channels on the primaries that own their slots, as the
// client's slot map has it. A channel whose owner cannot be looked up is
// placed again after a pause.
func (h *Hub) place(ctx context.Context, chs []*channel) {
	byAddr := make(map[string][]*channel)
	opts := make(map[string]*redis.Options)
	var failed []*channel
	for _, ch := range chs {
		if !h.unplaced(ch) {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		c, err := h.cluster.MasterForKey(lctx, ch.name)
		cancel()
		if err != nil {
			failed = append(failed, ch)
			continue
		}
		opt := c.Options()
		byAddr[opt.Addr] = append(byAddr[opt.Addr], ch)
		opts[opt.Addr] = opt
	}
	for addr, chs := range byAddr {
		h.attach(addr, opts[addr], chs)
	}
	if len(failed) > 0 {
		h.reloadSlots()
		go h.placeAll(failed, retryInterval)
	}
}

// placeAll places channels again after pause, and keeps trying, one pause
// apart, while some of them still have waiters and no node.
func (h *Hub) placeAll(chs []*channel, pause time.Duration) {
	if pause > 0 {
		time.Sleep(pause) // pacing only: nothing waits for this goroutine
	}
	h.place(context.Background(), chs)
}

// unplaced reports whether ch still has waiters and no node.
func (h *Hub) unplaced(ch *channel) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chans[ch.name] == ch && ch.node == nil
}

// attach places channels on the node at addr, starting one if there is
// none, and subscribes them there. opt is the dial template, taken from a
// node client of the same cluster.
func (h *Hub) attach(addr string, opt *redis.Options, chs []*channel) {
	h.mu.Lock()
	n := h.nodes[addr]
	start := n == nil
	if start {
		n = newNode(h, addr, opt)
		h.nodes[addr] = n
	}
	var placed []*channel
	for _, ch := range chs {
		if h.chans[ch.name] == ch && ch.node == nil {
			ch.node = n
			n.channels[ch.name] = ch
			placed = append(placed, ch)
		}
	}
	if len(n.channels) == 0 {
		n.lingerLocked()
	} else if n.reaper != nil {
		n.reaper.Stop()
	}
	h.mu.Unlock()
	if start {
		go n.run()
		return
	}
	n.send(placed)
}

// followSlots moves every channel whose slot is owned by another primary
// than the one it is subscribed on. It catches what Redis does not tell a
// subscriber: after a failover, the demoted primary keeps its shard
// subscribers as a replica (messages still reach them through the shard's
// replication, but the hub follows the primary, as it would any slot
// move). It runs on the idle health checks of node connections, at most
// once per healthInterval for the hub: one CLUSTER SLOTS.
func (h *Hub) followSlots(ctx context.Context) {
	h.mu.Lock()
	due := time.Since(h.slotsCheckedAt) >= healthInterval
	if due {
		h.slotsCheckedAt = time.Now()
	}
	h.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	// CLUSTER SLOTS, deprecated for CLUSTER SHARDS, is what go-redis builds
	// its own slot map from: its addresses are the ones the hub dials.
	//lint:ignore SA1019 the client's slot map is made from this reply
	ranges, err := h.cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return
	}
	owner := func(slot int) string {
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
				return r.Nodes[0].Addr
			}
		}
		return ""
	}
	type move struct {
		from *node
		to   string
		ch   *channel
		sent bool
	}
	var moves []move
	h.mu.Lock()
	for addr, n := range h.nodes {
		for _, ch := range n.channels {
			if to := owner(keyslot.Of(ch.name)); to != "" && to != addr {
				moves = append(moves, move{from: n, to: to, ch: ch, sent: ch.sent})
			}
		}
	}
	for _, m := range moves {
		m.from.unplaceLocked(m.ch)
	}
	h.mu.Unlock()
	if len(moves) == 0 {
		return
	}
	h.reloadSlots()
	byAddr := make(map[string][]*channel)
	for _, m := range moves {
		if m.sent {
			m.from.unsubscribe(m.ch.name)
		}
		byAddr[m.to] = append(byAddr[m.to], m.ch)
	}
	for addr, chs := range byAddr {
		h.attach(addr, moves[0].from.opt, chs)
	}
}

// reloadSlots asks the client to refresh its slot map, in the background,
// after a sign that it changed: the lock scripts of the waiters this hub
// wakes go through the same map.
func (h *Hub) reloadSlots() { h.cluster.ReloadState(context.Background()) }
