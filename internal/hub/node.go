package hub

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"

	"github.com/redisync/redisync/internal/keyslot"
)

// On a cluster the hub keeps one connection per primary that owns the slot
// of a channel somebody waits on, and speaks RESP2 on it itself (resp.go)
// instead of through go-redis's PubSub. The reason is reconnection: after a
// broken connection, a go-redis PubSub re-subscribes every channel it knew
// in one SSUBSCRIBE, which Redis refuses as soon as they span two slots,
// and a PubSub cannot be told not to. Here the hub owns the connection: it
// sends one SSUBSCRIBE per channel, reads the replies in order, follows
// MOVED to the slot's new owner, and after a failure places every channel
// again, slot map refreshed, on whichever primary owns it by then.
//
// A node's life: created when a channel is placed on its address, it dials
// on its own goroutine (run), subscribes the channels placed on it, then
// reads until the connection fails or it is stopped. A failure hands its
// channels back to the hub (fail), which places them again after a pause;
// a node left without channels for Linger is stopped (reap).

const (
	// writeTimeout bounds a write on a node connection when the client's
	// options give none.
	writeTimeout = 3 * time.Second
	// maxRedirects is how many MOVED replies in a row a channel follows at
	// once; past it, a slot map in flux is given retryInterval to settle.
	maxRedirects = 4
)

// pending is a command sent on a node connection whose reply has not been
// read yet.
type pending struct {
	kind byte     // 's' SSUBSCRIBE, 'u' SUNSUBSCRIBE, 'p' PING
	ch   *channel // 's': the channel subscribed
	name string   // 's', 'u': the channel name
}

// node is the hub's connection to one cluster primary.
type node struct {
	hub  *Hub
	addr string
	opt  *redis.Options // dial and auth template; its Addr is not used

	// Guarded by hub.mu.
	channels map[string]*channel // placed on this node
	inflight []pending           // in the order sent
	reaper   *time.Timer
	dead     bool // failed or stopped: channels are no longer placed here

	wmu sync.Mutex // serializes writes; guards nc and w
	nc  net.Conn   // nil until dialled
	w   []byte     // write buffer

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

func newNode(h *Hub, addr string, opt *redis.Options) *node {
	ctx, cancel := context.WithCancel(context.Background())
	return &node{
		hub: h, addr: addr, opt: opt,
		channels: make(map[string]*channel),
		ctx:      ctx, cancel: cancel,
		done: make(chan struct{}),
	}
}

// run dials, subscribes what is placed on the node and reads until the
// connection fails or the node is stopped.
func (n *node) run() {
	defer close(n.done)
	nc, br, err := n.dial()
	opened := false
	if err == nil {
		n.wmu.Lock()
		if n.ctx.Err() != nil {
			_ = nc.Close()
		} else {
			n.nc, opened = nc, true
			n.hub.opened()
			n.hub.mu.Lock()
			chs := make([]*channel, 0, len(n.channels))
			for _, ch := range n.channels {
				chs = append(chs, ch)
			}
			n.hub.mu.Unlock()
			err = n.sendLocked(chs)
		}
		n.wmu.Unlock()
	}
	if opened {
		if err == nil {
			// read returns only when the connection failed or was closed.
			_ = n.read(nc, br)
		}
		n.closeConn()
		n.hub.closed()
	}
	if n.ctx.Err() == nil {
		n.fail(opened)
	}
}

// dial connects and authenticates as the client's own connections do.
func (n *node) dial() (net.Conn, *bufio.Reader, error) {
	timeout := n.opt.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(n.ctx, timeout)
	defer cancel()
	network := n.opt.Network
	if network == "" {
		network = "tcp"
	}
	var nc net.Conn
	var err error
	if n.opt.Dialer != nil {
		nc, err = n.opt.Dialer(ctx, network, n.addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, network, n.addr)
	}
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(nc)
	if err := n.hello(ctx, nc, br); err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	return nc, br, nil
}

// hello sends AUTH and CLIENT SETNAME when the options ask for them and
// checks their replies.
func (n *node) hello(ctx context.Context, nc net.Conn, br *bufio.Reader) error {
	o := n.opt
	user, pass := o.Username, o.Password
	switch {
	case o.StreamingCredentialsProvider != nil:
		// The credentials current now; a connection that outlives them is
		// closed by the server and dialled again with fresh ones.
		creds, unsubscribe, err := o.StreamingCredentialsProvider.Subscribe(ignoreCredentials{})
		if err != nil {
			return err
		}
		if unsubscribe != nil {
			_ = unsubscribe()
		}
		user, pass = creds.BasicAuth()
	case o.CredentialsProviderContext != nil:
		var err error
		if user, pass, err = o.CredentialsProviderContext(ctx); err != nil {
			return err
		}
	case o.CredentialsProvider != nil:
		user, pass = o.CredentialsProvider()
	}
	var b []byte
	replies := 0
	if pass != "" {
		if user != "" {
			b = appendCommand(b, "AUTH", user, pass)
		} else {
			b = appendCommand(b, "AUTH", pass)
		}
		replies++
	}
	if o.ClientName != "" {
		b = appendCommand(b, "CLIENT", "SETNAME", o.ClientName)
		replies++
	}
	if replies == 0 {
		return nil
	}
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(b); err != nil {
		return err
	}
	for range replies {
		v, err := readReply(br)
		if err != nil {
			return err
		}
		if e, ok := v.(errorReply); ok {
			return e
		}
	}
	return nil
}

// read reads replies until the connection fails. A connection silent for
// healthInterval is pinged; silent for another, it is taken for dead even
// if TCP has not noticed.
func (n *node) read(nc net.Conn, br *bufio.Reader) error {
	pinged := false
	for {
		// Wait for the first byte of a reply under the health deadline, so
		// that a timeout never cuts a reply in half.
		_ = nc.SetReadDeadline(time.Now().Add(healthInterval))
		if _, err := br.Peek(1); err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if err := n.ping(); err != nil {
					return err
				}
				n.hub.followSlots(n.ctx)
				continue
			}
			return err
		}
		_ = nc.SetReadDeadline(time.Now().Add(healthInterval))
		v, err := readReply(br)
		if err != nil {
			return err
		}
		pinged = false
		n.handle(v)
	}
}

// send subscribes the channels on the connection, if it is up; otherwise
// run subscribes them once it is.
func (n *node) send(chs []*channel) {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	if n.nc != nil {
		_ = n.sendLocked(chs)
	}
}

// sendLocked writes one SSUBSCRIBE per channel still placed on the node
// and not yet sent: Redis refuses one naming channels of two slots. n.wmu
// must be held and n.nc set.
func (n *node) sendLocked(chs []*channel) error {
	h := n.hub
	b := n.w[:0]
	h.mu.Lock()
	for _, ch := range chs {
		if ch.node != n || ch.sent {
			continue
		}
		ch.sent = true
		n.inflight = append(n.inflight, pending{kind: 's', ch: ch, name: ch.name})
		b = appendCommand(b, "SSUBSCRIBE", ch.name)
	}
	h.mu.Unlock()
	return n.writeLocked(b)
}

// unsubscribe drops a channel nobody waits on any more.
func (n *node) unsubscribe(name string) {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	if n.nc == nil {
		return
	}
	n.hub.mu.Lock()
	if ch := n.channels[name]; ch != nil && ch.sent {
		// A channel of that name was placed here since it was dropped,
		// and its SSUBSCRIBE written: a SUNSUBSCRIBE written now would
		// end the server's subscription under it. (One not written yet
		// follows this SUNSUBSCRIBE on the connection.)
		n.hub.mu.Unlock()
		return
	}
	n.inflight = append(n.inflight, pending{kind: 'u', name: name})
	n.hub.mu.Unlock()
	_ = n.writeLocked(appendCommand(n.w[:0], "SUNSUBSCRIBE", name))
}

func (n *node) ping() error {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	n.hub.mu.Lock()
	n.inflight = append(n.inflight, pending{kind: 'p'})
	n.hub.mu.Unlock()
	return n.writeLocked(appendCommand(n.w[:0], "PING"))
}

// writeLocked writes b. A failed write closes the connection, so that the
// reader fails and the node's channels are placed again. n.wmu must be
// held.
func (n *node) writeLocked(b []byte) error {
	n.w = b
	if len(b) == 0 {
		return nil
	}
	timeout := n.opt.WriteTimeout
	if timeout <= 0 {
		timeout = writeTimeout
	}
	_ = n.nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := n.nc.Write(b); err != nil {
		_ = n.nc.Close()
		return err
	}
	return nil
}

// handle acts on one reply or push. At most one channel leaves the node
// per reply: it is placed again, at the address a MOVED named, or as the
// slot map has it (at once after an unrequested SUNSUBSCRIBE, after a
// pause after any other error).
func (n *node) handle(v any) {
	h := n.hub
	var (
		follow *channel      // to place again, if any
		to     string        // where MOVED sent it; "" for the slot map's owner
		pause  time.Duration // before placing it by the slot map
	)
	h.mu.Lock()
	switch v := v.(type) {
	case errorReply:
		p, ok := n.answeredLocked(string(v))
		if !ok || p.kind != 's' || !n.carriesLocked(p.ch) {
			break
		}
		if refusedReply(string(v)) {
			// An ACL user without channels: the hub's waiters poll,
			// and give up their subscriptions (see Hub.markRefused).
			h.markRefused()
			break
		}
		n.unplaceLocked(p.ch)
		follow = p.ch
		if addr, ok := movedTo(string(v)); ok && p.ch.redirects < maxRedirects {
			p.ch.redirects++
			to = addr
		} else {
			// ASK (a migration in progress), CLUSTERDOWN, or anything
			// else: try again once the cluster has had a moment.
			pause = retryInterval
		}
	case []any:
		if len(v) < 2 {
			break
		}
		kind, _ := v[0].(string)
		name, _ := v[1].(string)
		switch kind {
		case "ssubscribe":
			if p, ok := n.takeLocked('s', name); ok && n.carriesLocked(p.ch) {
				p.ch.redirects = 0
				p.ch.confirm()
			}
		case "sunsubscribe":
			if _, ok := n.takeLocked('u', name); ok {
				break
			}
			// Unrequested: the slot left this node (resharding, or the
			// node turned replica). Follow it: the client's map may not
			// know the new owner yet, in which case the old owner answers
			// MOVED with its address.
			if ch := n.channels[name]; ch != nil {
				n.unplaceLocked(ch)
				follow = ch
			}
		case "smessage":
			if ch := n.channels[name]; ch != nil && len(v) >= 3 {
				payload, _ := v[2].(string)
				notifyLocked(ch, payload)
			}
		case "pong":
			n.takeLocked('p', "")
		}
	}
	h.mu.Unlock()
	if follow == nil {
		return
	}
	h.reloadSlots()
	if to != "" {
		h.attach(to, n.opt, []*channel{follow})
		return
	}
	go h.placeAll([]*channel{follow}, pause)
}

// movedTo returns the address of a MOVED error ("MOVED 3999 host:port").
func movedTo(msg string) (string, bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || f[0] != "MOVED" {
		return "", false
	}
	return f[2], true
}

// redirectSlot returns the slot a MOVED or ASK error names.
func redirectSlot(msg string) (int, bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return 0, false
	}
	slot, err := strconv.Atoi(f[1])
	return slot, err == nil
}

// answeredLocked removes the command that an error reply answers and
// returns it. Only SSUBSCRIBE, SUNSUBSCRIBE and PING are sent, and replies
// come in order: an error answers the oldest command not yet answered.
// Not quite always: after a slot left the node, Redis pushes an
// unrequested "sunsubscribe" for each channel of it, and answers a
// SUNSUBSCRIBE of one of them with -MOVED; a push read after such a
// SUNSUBSCRIBE was sent takes its entry (handle cannot tell it from the
// reply), and the -MOVED that follows answers a command no longer in
// flight. A redirection names the slot of the channel it answers, so one
// whose slot is not the oldest command's is that reply, and answers
// nothing in flight: charged to the oldest command (say, the SSUBSCRIBE of
// a channel of another slot), it would send that channel to the moved
// slot's new owner. Another error names no slot and still goes to the
// oldest; one charged wrongly that way costs a pause, as the channel is
// then placed by the slot map.
func (n *node) answeredLocked(msg string) (pending, bool) {
	if len(n.inflight) == 0 {
		return pending{}, false
	}
	if slot, ok := redirectSlot(msg); ok {
		if p := n.inflight[0]; p.kind == 'p' || keyslot.Of(p.name) != slot {
			return pending{}, false
		}
	}
	return n.popLocked()
}

// popLocked removes the oldest command awaiting its reply.
func (n *node) popLocked() (pending, bool) {
	if len(n.inflight) == 0 {
		return pending{}, false
	}
	p := n.inflight[0]
	n.inflight = n.inflight[1:]
	return p, true
}

// takeLocked removes the oldest command of kind on name awaiting its
// reply.
func (n *node) takeLocked(kind byte, name string) (pending, bool) {
	for i, p := range n.inflight {
		if p.kind == kind && p.name == name {
			n.inflight = append(n.inflight[:i], n.inflight[i+1:]...)
			return p, true
		}
	}
	return pending{}, false
}

// carriesLocked reports whether ch is a current channel placed on n.
func (n *node) carriesLocked(ch *channel) bool {
	return ch != nil && ch.node == n && n.hub.chans[ch.name] == ch
}

// unplaceLocked takes ch off n: its subscription lapsed, so its waiters
// are woken to try at once (a release may have been published where
// nobody listened), and again once it is confirmed elsewhere.
func (n *node) unplaceLocked(ch *channel) {
	delete(n.channels, ch.name)
	ch.node, ch.sent = nil, false
	ch.lapse()
	wakeLocked(ch, -1)
	if len(n.channels) == 0 && !n.dead {
		n.lingerLocked()
	}
}

// fail hands the channels of a broken node back to the hub, which places
// them again after a pause. A connection that had opened and carried
// channels counts as a reconnection.
func (n *node) fail(opened bool) {
	h := n.hub
	h.mu.Lock()
	n.dead = true
	if h.nodes[n.addr] == n {
		delete(h.nodes, n.addr)
	}
	chs := make([]*channel, 0, len(n.channels))
	for _, ch := range n.channels {
		chs = append(chs, ch)
		n.unplaceLocked(ch)
	}
	n.inflight = nil
	if n.reaper != nil {
		n.reaper.Stop()
	}
	h.mu.Unlock()
	n.closeConn()
	if len(chs) > 0 {
		if opened {
			h.reconnected()
		}
		h.reloadSlots()
		go h.placeAll(chs, retryInterval)
	}
}

// lingerLocked arms the timer that stops n if it stays without channels
// for Linger. hub.mu must be held.
func (n *node) lingerLocked() {
	if n.reaper == nil {
		n.reaper = time.AfterFunc(Linger, n.reap)
		return
	}
	n.reaper.Reset(Linger)
}

// reap stops n if it is still without channels.
func (n *node) reap() {
	h := n.hub
	h.mu.Lock()
	idle := len(n.channels) == 0 && !n.dead
	if idle {
		n.dead = true
		if h.nodes[n.addr] == n {
			delete(h.nodes, n.addr)
		}
	}
	h.mu.Unlock()
	if idle {
		n.stop()
	}
}

// stop closes the connection and waits for run to return.
func (n *node) stop() {
	n.cancel()
	n.closeConn()
	<-n.done
}

func (n *node) closeConn() {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	if n.nc != nil {
		_ = n.nc.Close()
	}
}

// ignoreCredentials is the listener of a one-time read of a streaming
// credentials provider.
type ignoreCredentials struct{}

func (ignoreCredentials) OnNext(auth.Credentials) {}
func (ignoreCredentials) OnError(error)           {}

// errNotCluster is returned by the cluster placement for a client that is
// not a cluster client.
var errNotCluster = errors.New("hub: sharded pub/sub needs a *redis.ClusterClient")
