package hub

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// ErrRefused is the error of Subscribe on a client whose waiters poll:
// its server or proxy refused the hub's first subscription, or polling
// was turned on for it (Poll). The waiter asks Redis on its own instead,
// every PollInterval or so (see Jittered).
var ErrRefused = errors.New("pubsub: subscriptions refused: waiters poll")

// PollInterval is how often, about, a waiter that cannot subscribe asks
// Redis whether it may proceed. A release's grant waits in Redis for the
// waiter's next ask, so a handoff costs up to one interval (half of one
// on average) more than with pub/sub; each parked waiter costs Redis one
// script per interval.
const PollInterval = 25 * time.Millisecond

// Jittered returns a sleep of between half of PollInterval and all of it,
// chosen at random: waiters that polled together do not stay in step.
func Jittered() time.Duration {
	return PollInterval/2 + rand.N(PollInterval/2+1)
}

// mode is whether the waiters of one go-redis client poll: forced by
// Poll, or found when the server refused the hub's first subscription
// (see refusal). It outlives the hubs of the client (a hub is made anew
// after its client was idle, see package perclient), so a client finds
// it out once in its life.
type mode struct {
	mu       sync.Mutex // guards refused and forced
	refused  bool
	refusedC chan struct{} // closed when refused is set
	forced   bool
}

func newMode() *mode { return &mode{refusedC: make(chan struct{})} }

// modes holds each client's mode, by a weak pointer to the client, and
// forgets it when the client is collected: it keeps no client reachable.
var modes sync.Map

// modeOf returns rdb's mode. A client that is not a *redis.Client or
// *redis.ClusterClient (a test's fake, a Ring) gets a mode of its own
// for each hub.
func modeOf(rdb redis.UniversalClient) *mode {
	switch c := rdb.(type) {
	case *redis.Client:
		return weakMode(c)
	case *redis.ClusterClient:
		return weakMode(c)
	}
	return newMode()
}

func weakMode[T any](c *T) *mode {
	k := weak.Make(c)
	if m, ok := modes.Load(k); ok {
		return m.(*mode)
	}
	m, loaded := modes.LoadOrStore(k, newMode())
	if !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[T]) { modes.Delete(k) }, k)
	}
	return m.(*mode)
}

// Poll makes every waiter on rdb poll without subscribing first: for a
// deployment known to refuse subscriptions (a proxy without pub/sub, an
// ACL user without channels), so that no waiter spends a subscription,
// and the wait for its refusal, finding it out. It does no I/O and cannot
// be undone for rdb.
func Poll(rdb redis.UniversalClient) {
	m := modeOf(rdb)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forced = true
}

// Polls reports whether the hub's waiters poll: polling was turned on
// (Poll), or the server refused the hub's first subscription.
func (h *Hub) Polls() bool {
	h.mode.mu.Lock()
	defer h.mode.mu.Unlock()
	return h.mode.forced || h.mode.refused
}

// markRefused records that the server refused a subscription of the hub's
// connection, and wakes every subscription waiting for a confirmation
// that will not come: they end with ErrRefused, and their waiters poll.
func (h *Hub) markRefused() {
	m := h.mode
	m.mu.Lock()
	if !m.refused {
		m.refused = true
		close(m.refusedC)
	}
	m.mu.Unlock()
}

// refusal is what the reader of the hub's connection makes of an error
// while no subscription of the connection was ever confirmed: whether the
// server refuses subscriptions. An error reply (an ACL user without
// channels: NOPERM; a server without the command) is a refusal. The
// connection closed by the other end, twice in a row right after
// SUBSCRIBE, while a PING on the client's ordinary connections answers,
// is one too: a proxy that does not know the command closes the
// connection (twemproxy). Anything else (a dial that failed, a timeout)
// says nothing.
type refusal struct {
	closes int // connections closed by the other end before a confirmation
}

func (r *refusal) refused(ctx context.Context, rdb redis.UniversalClient, err error) bool {
	var reply redis.Error
	switch {
	case errors.As(err, &reply):
		// Not every error reply: a server still loading its data, say,
		// refuses for a moment only.
		return refusedReply(reply.Error())
	case ctx.Err() != nil || isTimeout(err) || isDial(err):
		return false
	}
	r.closes++
	if r.closes < 2 {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, healthInterval)
	defer cancel()
	return rdb.Ping(pctx).Err() == nil
}

// refusedReply reports whether an error reply to SUBSCRIBE or SSUBSCRIBE
// refuses it for good: the user has no rights to the command or the channel, or the
// server does not know the command. Redirections and a cluster that is
// down are answered by placing the channel again.
func refusedReply(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR unknown command")
}

// isDial reports whether err is a failure to reach the server at all.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
