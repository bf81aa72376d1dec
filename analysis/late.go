package main

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/lua"
)

// Late delivery. tc netem is not at hand, and a cut link drops packets
// that TCP then resends on its own schedule, so the harness puts a proxy
// of its own between each client and each redis-server for the late
// fault. The proxy forwards both ways at once until the nemesis stalls a
// client's connections: whatever the client sends on a stalled
// connection is read off the socket at once (so a client that gives up
// and closes the connection loses nothing) and written to Redis only
// when the stall ends, in the order it was sent, on a connection to Redis
// kept open until then. A connection the client opens afterwards is not
// stalled: the client reconnects and goes on, its timeouts ran out long
// before, and Redis then runs the stalled commands late, as a network
// that delivers a retransmitted segment after a long stall makes it do.
// The nemesis stalls the holder's open connections again every
// stallEvery for a lease, then every client's for another, so that
// whatever the clients do then (renew, release, acquire) has copies that
// arrive late.

// lateHold is how long a stall holds a client's commands: past the
// request window of the library's scripts (exactly.RequestWindow, 5s:
// a copy that runs after its deadline changes nothing and answers LATE)
// by half a second, so that what the client sent in a stall's first half
// second arrives past its deadline and what it sent later arrives within
// it, where the state the script expects (the holder, the hold id it
// names) must keep it harmless.
const lateHold = 5*time.Second + 500*time.Millisecond

// stallEvery is how often the nemesis stalls the clients' connections
// that are not stalled yet, for two leases.
const stallEvery = 200 * time.Millisecond

// lateAfter is when a command counts as late: held longer than the
// clients' read timeout (see runClient), so that its sender has given
// it up.
const lateAfter = 500 * time.Millisecond

// A lateProxy forwards one client's connections to one redis-server.
type lateProxy struct {
	ln     net.Listener
	target string
	late   atomic.Int64                       // chunks of commands delivered more than lateAfter after they were read
	record func(late time.Duration, b []byte) // called for each such chunk
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex // guards conns
	conns  map[*proxyConn]struct{}
}

// A proxyConn is one client connection and its connection to Redis.
type proxyConn struct {
	c, up net.Conn
	until atomic.Int64 // unix nanoseconds: what the client sent before it is held until it
}

func newLateProxy(listen, target string, record func(time.Duration, []byte)) (*lateProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &lateProxy{ln: ln, target: target, record: record, stop: make(chan struct{}), conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *lateProxy) addr() string { return p.ln.Addr().String() }

// stall stalls every open connection not stalled already: what its client
// sends from now on is held until d after now.
func (p *lateProxy) stall(d time.Duration) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		if pc.until.Load() < now.UnixNano() {
			pc.until.Store(now.Add(d).UnixNano())
		}
	}
}

func (p *lateProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		pc := &proxyConn{c: c, up: up}
		if !p.track(pc) {
			return
		}
		p.wg.Add(1)
		go p.pipe(pc)
	}
}

// track registers the pair of connections, unless the proxy is closing.
func (p *lateProxy) track(pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.stop:
		_, _ = pc.c.Close(), pc.up.Close()
		return false
	default:
	}
	p.conns[pc] = struct{}{}
	return true
}

// A chunk is what one read from the client returned, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe forwards one client connection: a reader queues what the client
// sends, a writer delivers it when its hold ends, and the replies go back
// as they come (into the void once the client is gone).
func (p *lateProxy) pipe(pc *proxyConn) {
	defer p.wg.Done()
	c, up := pc.c, pc.up
	queue := make(chan chunk, 4096)
	go func() { // the reader
		defer close(queue)
		for {
			b := make([]byte, 16<<10)
			n, err := c.Read(b)
			if n > 0 {
				queue <- chunk{b: b[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	replies := make(chan struct{})
	go func() { // the replies
		defer close(replies)
		if _, err := io.Copy(c, up); err != nil {
			_, _ = io.Copy(io.Discard, up)
		}
	}()
	for ch := range queue { // the writer
		if until := time.Unix(0, pc.until.Load()); ch.at.Before(until) {
			if !p.wait(time.Until(until)) {
				break
			}
		}
		if late := time.Since(ch.at); late > lateAfter {
			p.late.Add(1)
			p.record(late, ch.b)
		}
		if _, err := up.Write(ch.b); err != nil {
			break
		}
	}
	// Give Redis the time to answer the last commands before it sees the
	// connection end (it runs what it has read either way).
	p.wait(100 * time.Millisecond)
	_ = up.Close()
	<-replies
	_ = c.Close()
	for range queue { // the reader ends on the closed connection; it may be blocked on a full queue
	}
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// wait sleeps for d, or until the proxy closes (then false).
func (p *lateProxy) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.stop:
		return false
	}
}

// close stops the proxy and closes every connection it forwards.
func (p *lateProxy) close() {
	p.mu.Lock()
	close(p.stop)
	for pc := range p.conns {
		_, _ = pc.c.Close(), pc.up.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// startProxies puts a proxy between every client and every lock server.
func (s *segment) startProxies() error {
	s.proxies = map[int][]*lateProxy{}
	log, err := os.Create(filepath.Join(s.dir, "late.log"))
	if err != nil {
		return err
	}
	s.lateLog = &lateLog{f: log, start: s.start, names: scriptNames(), seen: map[string]int{}}
	for i := 1; i <= s.r.cfg.clients; i++ {
		for j, n := range s.nodes {
			i, who := i, fmt.Sprintf("client %d to server %d", i, j+1)
			p, err := newLateProxy(net.JoinHostPort(redisIP, "0"), n.addr(), func(late time.Duration, b []byte) {
				s.lateLog.add(i, who, late, b)
			})
			if err != nil {
				return err
			}
			s.proxies[i] = append(s.proxies[i], p)
		}
	}
	return nil
}

func (s *segment) closeProxies() {
	for _, ps := range s.proxies {
		for _, p := range ps {
			p.close()
		}
	}
	s.proxies = nil
	if s.lateLog != nil {
		_ = s.lateLog.f.Close()
	}
}

// A lateLog writes down every chunk of commands a proxy delivered late,
// naming the library's scripts in it, and counts them by name.
type lateLog struct {
	mu    sync.Mutex // guards f and seen
	f     *os.File
	start time.Time
	names map[string]string // EVALSHA's sha1 -> script file
	seen  map[string]int    // script file (or command) -> copies delivered late
	sent  []lateCopy
}

// A lateCopy is one chunk of commands a proxy delivered late.
type lateCopy struct {
	client int
	at     int64 // unix nanoseconds, when it was written to Redis
	names  []string
}

func (l *lateLog) add(client int, who string, late time.Duration, b []byte) {
	var what []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(b), "\r\n", " ")) {
		if name, ok := l.names[strings.ToLower(f)]; ok {
			what = append(what, name)
		} else if up := strings.ToUpper(f); up == "EVAL" || up == "WAIT" || up == "HELLO" || up == "PING" {
			what = append(what, up)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range what {
		l.seen[w]++
	}
	l.sent = append(l.sent, lateCopy{client: client, at: time.Now().UnixNano(), names: what})
	fmt.Fprintf(l.f, "+%v %s, %v late: %s\n", time.Since(l.start).Round(time.Millisecond), who,
		late.Round(time.Millisecond), strings.Join(what, " "))
}

// summary lists what was delivered late, most often first.
func (l *lateLog) summary() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for name, n := range l.seen {
		parts = append(parts, fmt.Sprintf("%s x%d", name, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// scriptNames maps the sha1 of each of the library's scripts to its file
// name, to name the EVALSHA commands a proxy delivered late.
func scriptNames() map[string]string {
	names := map[string]string{}
	entries, _ := lua.Scripts.ReadDir(".")
	for _, e := range entries {
		if src, err := lua.Source(e.Name()); err == nil && strings.HasSuffix(e.Name(), ".lua") {
			names[fmt.Sprintf("%x", sha1.Sum([]byte(src)))] = strings.TrimSuffix(e.Name(), ".lua")
		}
	}
	return names
}

// lateDeliver stalls connections to every server again and again for
// two leases, each for lateHold, and waits until the last stall has
// delivered: in the first lease only the holder's (its renewals and its
// releases, retried on new connections, leave copies behind while it
// goes on taking the lock again), in the second every client's (the
// waiters' acquisitions too).
func (s *segment) lateDeliver(ctx context.Context) string {
	c := s.target()
	start := time.Now()
	for time.Since(start) < 2*s.lease && ctx.Err() == nil {
		for id, ps := range s.proxies {
			if id != c.id && time.Since(start) < s.lease {
				continue
			}
			for _, p := range ps {
				p.stall(lateHold)
			}
		}
		sleep(ctx, stallEvery)
	}
	sleep(ctx, lateHold+lateAfter)
	return c.who() + ", then every client"
}

// lateCounts is what the late fault did: chunks of commands the proxies
// delivered late, and the scripts Redis refused as late (the LATE errors
// of INFO errorstats, which restarts do not reset here: the late fault
// restarts nothing).
func (s *segment) lateCounts(ctx context.Context) (delivered, refused int) {
	for _, ps := range s.proxies {
		for _, p := range ps {
			delivered += int(p.late.Load())
		}
	}
	for _, n := range s.nodes {
		rdb := n.client()
		info, err := rdb.Info(ctx, "errorstats").Result()
		_ = rdb.Close()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_LATE:count="); ok {
				k, _ := strconv.Atoi(v)
				refused += k
			}
		}
	}
	return delivered, refused
}

// releasedLate counts the pairs of conflicting holds in which the second
// began while the first was believed held, and among them those that
// began at most within after a late copy of a release of the first
// holder's client (a script whose name says unlock or release) reached
// Redis: the overlaps that late copies of releases explain.
func (l *lateLog) releasedLate(holds []hold, within time.Duration) (pairs, explained int) {
	for _, a := range holds {
		for _, b := range holds {
			if a.client == b.client || b.start <= a.start || b.start >= a.end || !conflict(a, b) {
				continue
			}
			pairs++
			if l != nil && l.releaseBefore(a.client, b.start, within) {
				explained++
			}
		}
	}
	return pairs, explained
}

func (l *lateLog) releaseBefore(client int, t int64, within time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.sent {
		if c.client != client || c.at > t || t-c.at > int64(within) {
			continue
		}
		for _, n := range c.names {
			if strings.Contains(n, "unlock") || strings.Contains(n, "release") {
				return true
			}
		}
	}
	return false
}
