package hub

import "github.com/redisync/redisync/observe"

// The pub/sub figures of the client's Observer (package observe), if it
// has one: connections up and down, and reconnections. Each is one call
// where a connection's reader starts, stops, or reads again after its
// connection broke.

// opened reports that a connection opened: its reader started.
func (h *Hub) opened() { h.event(observe.ConnOpened) }

// closed reports that a connection whose reader had started closed.
func (h *Hub) closed() { h.event(observe.ConnClosed) }

// reconnected reports that a broken connection is back (unsharded), or
// that a cluster node's connection broke and its channels are being
// subscribed again (sharded).
func (h *Hub) reconnected() { h.event(observe.Reconnected) }

func (h *Hub) event(e observe.Event) {
	if o := observe.Of(h.rdb); o != nil {
		o.PubSub(e)
	}
}
