// Package pubsub multiplexes wake-up notifications of many waiters over
// one pub/sub connection per Redis client: the transport redisync's
// waiters sleep on, for code of your own that waits on Redis channels the
// same way.
//
// [Hub.Subscribe] returns once Redis has confirmed the subscription, so a
// message published after it returns is not missed. A message's payload says
// how many waiters it may wake: "1" (or anything that is not a number) wakes
// the waiter that subscribed first among those not yet woken, "n" wakes n of
// them in subscription order, "-1" wakes every waiter. Wake-ups of a waiter
// that has not run yet coalesce into one. When the connection is
// re-established after a fault, every waiter is woken, since messages
// published meanwhile are lost; a waiter should therefore re-check its
// condition after every wake-up, and bound its sleep with a timer of its
// own.
//
// A channel is subscribed on its first Subscribe and unsubscribed when its
// last Subscription closes. A Hub runs goroutines only while a
// Subscription is open (and for a short linger after the last one closes).
//
// # Redis Cluster
//
// On a *redis.ClusterClient with sharded set, channels are subscribed with
// SSUBSCRIBE (Redis Cluster 7+) and messages must be sent with SPUBLISH.
// The hub then keeps one connection per primary that owns the slot of a
// channel somebody waits on, however many channels and slots: a process
// waiting on thousands of locks holds three connections on a three-master
// cluster, not thousands. SSUBSCRIBE is sent once per channel, since Redis
// refuses one naming channels of two slots.
//
// These connections are not go-redis PubSubs. After a broken connection a
// PubSub subscribes every channel it knew again in one command, which a
// cluster node refuses as soon as they span two slots, and nothing stops it
// from doing so. The hub therefore dials each primary itself (with the
// client's dialer, TLS settings, credentials and client name), speaks the
// few commands of a subscriber, and owns reconnection: on a broken
// connection, or one silent past two health-check intervals, it places every
// channel again, slot map refreshed, on whichever primary owns it by then.
//
// Slots move. When a slot of a subscribed channel leaves its node
// (resharding, failover), Redis tells the subscribers with an unrequested
// SUNSUBSCRIBE; a client whose slot map is stale is answered MOVED. Either
// way the hub refreshes the client's slot map (ReloadState), subscribes
// the channel on the slot's new owner and wakes the channel's waiters, at
// once and again when the new subscription is confirmed, because a message
// published in between reached nobody. A Subscribe made meanwhile returns
// once the channel is confirmed on its new owner.
//
// Standalone and Sentinel clients use one go-redis PubSub for the whole
// client, whose reconnection suits them.
//
// # Where subscriptions are refused
//
// A proxy without pub/sub (twemproxy closes the connection on SUBSCRIBE)
// or an ACL user without channels (NOPERM) refuses every subscription.
// The hub of a client finds that out from its first subscription, or is
// told so by a primitive's WithoutPubSub option, and from then on
// [Hub.Subscribe] returns [ErrRefused] at once, for every channel: the
// caller polls instead. redisync's own waiters then ask Redis about every
// 25ms, jittered; the setting is the client's, since its waiters share one
// hub.
package pubsub

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
)

// ErrRefused is the error of Subscribe on a client whose server or proxy
// refuses subscriptions (see the package doc): poll instead.
var ErrRefused = hub.ErrRefused

// Hub is the subscription hub of one Redis client. It is safe for
// concurrent use.
type Hub struct{ h *hub.Hub }

// New returns a hub for rdb. It does no I/O. With sharded set, channels are
// subscribed with SSUBSCRIBE; rdb must then be a *redis.ClusterClient.
func New(rdb redis.UniversalClient, sharded bool) *Hub {
	if rdb == nil {
		panic("pubsub: New with nil redis client")
	}
	if _, ok := rdb.(*redis.ClusterClient); sharded && !ok {
		panic(fmt.Sprintf("pubsub: New with sharded set needs a *redis.ClusterClient, not %T", rdb))
	}
	return &Hub{h: hub.New(rdb, sharded)}
}

// Subscribe registers a waiter on channel and returns once Redis has
// confirmed the subscription. On error, or when ctx ends first, nothing is
// left subscribed.
func (h *Hub) Subscribe(ctx context.Context, channel string) (*Subscription, error) {
	s, err := h.h.Subscribe(ctx, channel)
	if err != nil {
		return nil, err
	}
	return &Subscription{s: s}, nil
}

// Subscription is one waiter's interest in one channel.
type Subscription struct{ s *hub.Subscription }

// C returns the channel on which the waiter is woken. A receive may stand
// for several messages.
func (s *Subscription) C() <-chan struct{} { return s.s.C() }

// Close ends the subscription. A wake-up the waiter received on C but did
// not take is passed to another waiter of the channel, so that leaving
// cannot swallow a message. Close is idempotent.
func (s *Subscription) Close() { s.s.Close() }
