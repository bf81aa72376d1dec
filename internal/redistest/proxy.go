package redistest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Proxy is a TCP proxy on a loopback port between Redis clients and one
// Redis server, for injecting network faults: it can stall all traffic (a
// partition that heals: bytes are held, not lost), cut every connection,
// refuse new ones, and lose the reply of one chosen command after the server
// ran it, or keep one chosen command from the server until the test hands
// it over late. It forwards whole RESP values, so it knows which reply
// answers which command on an ordinary (request/reply) connection; pub/sub
// pushes pass through untouched.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every connection's pumps

	mu      sync.Mutex // guards everything below
	gate    chan struct{}
	refuse  bool
	closed  bool
	conns   map[*proxyConn]struct{}
	rules   []*rule // armed DropReply and Hold faults, oldest first
	dropped int
	latency time.Duration // added to every reply: a network, not loopback
}

// rule is one armed one-shot fault: a Hold when held is set, else a
// DropReply.
type rule struct {
	match func(args []string) bool
	done  chan struct{} // DropReply: closed once the reply was dropped
	held  *Held
}

// NewProxy starts a proxy on a free 127.0.0.1 port that forwards to target
// (a "host:port" on loopback). It is closed, with every connection, when t
// ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[*proxyConn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's "127.0.0.1:<port>"; point clients at it.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// NewClient returns a go-redis client that connects through the proxy,
// closed when t ends. mod functions may adjust the options.
func (p *Proxy) NewClient(t testing.TB, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: p.Addr()}
	for _, f := range mod {
		f(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Stall stops forwarding in both directions on every connection, current
// and new, until Resume: clients see a silent network, as in a partition.
// Bytes already read are held and delivered by Resume.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
}

// SetLatency delays every reply by d from when it left the server, as a
// network between hosts would, so that benchmarks can show what a
// round-trip-bound client does rather than a CPU-bound one. Zero, the
// default, forwards at once.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// Resume ends a Stall.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
}

// Cut closes every current connection on both sides and reports how many
// there were. Clients see their connections reset, as after a server crash
// or a NAT timeout; new connections are accepted as usual.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// Refuse makes the proxy close new connections at once (on) or accept them
// again (off), as a server that is down would refuse them.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// DropReply arms a one-shot fault: the next command, on any connection,
// for which match returns true (given the command's arguments, e.g.
// ["EVALSHA", sha, "2", key, ...]) is forwarded and run by the server, but
// its reply is discarded and the client's connection is closed, so the
// client cannot know whether the command ran. The returned channel is
// closed once a reply has been dropped.
func (p *Proxy) DropReply(match func(args []string) bool) <-chan struct{} {
	r := &rule{match: match, done: make(chan struct{})}
	p.arm(r)
	return r.done
}

func (p *Proxy) arm(r *rule) {
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
}

// Dropped returns how many replies DropReply rules have dropped.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Conns returns how many client connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &proxyConn{p: p, client: client, server: server, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go c.requests()
		go c.replies()
	}
}

// proxyConn is one client connection and its connection to the server.
type proxyConn struct {
	p              *Proxy
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close

	mu      sync.Mutex // guards pending
	pending []*rule    // one entry per command awaiting its reply; nil: forward
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.server.Close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

// pass waits while the proxy is stalled. It reports false once the
// connection is closed.
func (c *proxyConn) pass() bool {
	c.p.mu.Lock()
	gate := c.p.gate
	c.p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-c.done:
			return false
		}
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// requests forwards commands from the client to the server.
func (c *proxyConn) requests() {
	defer c.p.wg.Done()
	defer c.close()
	r := bufio.NewReader(c.client)
	for {
		f, err := readFrame(r)
		if err != nil || !c.pass() {
			return
		}
		if expectsReply(f.args) {
			r := c.p.takeRule(f.args)
			if r != nil && r.held != nil {
				// Never forwarded, so no reply will come to pair with it:
				// it takes no entry in pending.
				r.held.keep(f.raw)
				continue
			}
			c.mu.Lock()
			c.pending = append(c.pending, r)
			c.mu.Unlock()
		}
		if _, err := c.server.Write(f.raw); err != nil {
			return
		}
	}
}

// replies forwards replies from the server to the client, dropping the one
// an armed rule picked.
func (c *proxyConn) replies() {
	defer c.p.wg.Done()
	defer c.close()
	r := bufio.NewReader(c.server)
	for {
		f, err := readFrame(r)
		if err != nil || !c.pass() {
			return
		}
		c.p.mu.Lock()
		latency := c.p.latency
		c.p.mu.Unlock()
		if latency > 0 {
			// Frames read back to back (a pipeline) share one delay.
			time.Sleep(time.Until(f.at.Add(latency)))
		}
		if f.kind != '>' {
			c.mu.Lock()
			var drop *rule
			if len(c.pending) > 0 {
				drop, c.pending = c.pending[0], c.pending[1:]
			}
			c.mu.Unlock()
			if drop != nil {
				c.p.mu.Lock()
				c.p.dropped++
				c.p.mu.Unlock()
				close(drop.done)
				return // closing loses the reply and anything after it
			}
		}
		if _, err := c.client.Write(f.raw); err != nil {
			return
		}
	}
}

// takeRule removes and returns the first armed rule matching args.
func (p *Proxy) takeRule(args []string) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.match(args) {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return r
		}
	}
	return nil
}

// expectsReply reports whether a command gets an ordinary reply, as opposed
// to the pushes that (un)subscribe commands answer with.
func expectsReply(args []string) bool {
	if len(args) == 0 {
		return false
	}
	cmd := strings.ToUpper(args[0])
	return !strings.HasSuffix(cmd, "SUBSCRIBE")
}

// IsScriptCall reports whether args is an EVAL or EVALSHA (or their _RO
// variants) that names key among its KEYS; a match function for DropReply.
func IsScriptCall(args []string, key string) bool {
	if len(args) < 3 || !strings.HasPrefix(strings.ToUpper(args[0]), "EVAL") {
		return false
	}
	var n int
	for _, ch := range args[2] {
		if ch < '0' || ch > '9' {
			return false
		}
		n = n*10 + int(ch-'0')
	}
	for _, k := range args[3:min(3+n, len(args))] {
		if k == key {
			return true
		}
	}
	return false
}
