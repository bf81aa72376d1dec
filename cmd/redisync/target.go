package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"
)

// defaultConnectTimeout is --timeout's default: how long the first
// contact with the server (connection and PING) may take.
const defaultConnectTimeout = 2 * time.Second

// defaultRedisURL is where inspect, unlock and lock look when given no
// address.
const defaultRedisURL = "redis://localhost:6379"

// connFlags are the flags that choose the Redis deployment.
type connFlags struct {
	url      string
	cluster  string
	timeout  time.Duration // --timeout: bounds the connection check
	embedded bool          // with neither flag: an embedded miniredis (else defaultRedisURL)
}

// addConnFlags adds --redis and --cluster to fs. With embedded, the default
// is an in-process miniredis; otherwise it is defaultRedisURL.
func addConnFlags(fs *flagSet, embedded bool) *connFlags {
	c := &connFlags{embedded: embedded}
	def := "an embedded miniredis"
	if !embedded {
		def = defaultRedisURL
	}
	fs.StringVar(&c.url, "redis", "", "Redis server `URL`: redis://[user:password@]host:port[/db], or rediss:// for TLS (default "+def+")")
	fs.StringVar(&c.cluster, "cluster", "", "Redis Cluster seed `nodes`: host:port,host:port,... or a redis:// URL with ?addr= for more nodes")
	fs.DurationVar(&c.timeout, "timeout", defaultConnectTimeout, "how long the connection check (connect and PING) may take before Redis counts as unreachable (exit code 1)")
	return c
}

// target is the Redis deployment a command talks to. It hands out clients,
// one per simulated service instance, and closes them all in close.
type target struct {
	desc    string // for messages: "embedded miniredis", "redis://host:port", ...
	mini    *miniredis.Miniredis
	single  *redis.Options
	cluster *redis.ClusterOptions

	mu      sync.Mutex // protects clients
	clients []redis.UniversalClient
}

// open checks the flags, connects and pings the server, for at most
// --timeout or until ctx's deadline, whichever is first. Bad flags are
// usage errors; an unreachable server is a runtime error that says where
// it looked.
func (c *connFlags) open(ctx context.Context) (*target, error) {
	if c.timeout <= 0 {
		return nil, usagef("--timeout %v: it must be above zero", c.timeout)
	}
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := t.client().Ping(pctx).Err(); err != nil {
		t.close()
		hint := "is it running? --redis URL or --cluster host:port,... chooses another"
		switch {
		case ctx.Err() != nil:
			hint = "interrupted"
		case pctx.Err() != nil || timedOut(err):
			hint = fmt.Sprintf("no answer within --timeout %v: is it running, or stopped? --redis URL or --cluster host:port,... chooses another", c.timeout)
		case errors.Is(err, io.EOF):
			// Reached, then dropped at the handshake: go-redis opens
			// every connection with HELLO, which a proxy without it
			// (twemproxy) answers by closing the connection.
			hint = "closed at the first command, as a proxy such as twemproxy closes it on HELLO; " +
				"the redisync command reads with TIME, SCAN and PUBSUB NUMSUB, which such a proxy refuses too: " +
				"point --redis at the server behind the proxy"
		}
		return nil, fmt.Errorf("cannot reach Redis at %s: %w (%s)", t.desc, err, hint)
	}
	return t, nil
}

// timedOut reports whether err is a network timeout: go-redis sets the
// connection's deadline to ctx's, and its read may time out a moment
// before ctx's own timer fires.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *connFlags) target() (*target, error) {
	switch {
	case c.url != "" && c.cluster != "":
		return nil, usagef("--redis and --cluster exclude each other")
	case c.cluster != "":
		opt, err := parseCluster(c.cluster)
		if err != nil {
			return nil, err
		}
		return &target{desc: "cluster " + strings.Join(opt.Addrs, ","), cluster: opt}, nil
	case c.url != "" || !c.embedded:
		raw := c.url
		if raw == "" {
			raw = defaultRedisURL
		}
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, usagef("--redis %q: %v", raw, err)
		}
		return &target{desc: redactURL(raw), single: opt}, nil
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded miniredis: %w", err)
	}
	return &target{desc: "embedded miniredis", mini: mr, single: &redis.Options{Addr: mr.Addr()}}, nil
}

// parseCluster accepts "host:port,host:port" or a cluster URL.
func parseCluster(s string) (*redis.ClusterOptions, error) {
	if strings.Contains(s, "://") {
		opt, err := redis.ParseClusterURL(s)
		if err != nil {
			return nil, usagef("--cluster %q: %v", redactURL(s), err)
		}
		return opt, nil
	}
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !strings.Contains(a, ":") {
			return nil, usagef("--cluster: %q is not host:port", a)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, usagef("--cluster: no node addresses")
	}
	return &redis.ClusterOptions{Addrs: addrs}, nil
}

// redactURL hides the password of a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

// embedded reports whether t is the in-process miniredis.
func (t *target) embedded() bool { return t.mini != nil }

// client returns a new client of its own, as one more service instance
// would have. It is closed by close.
func (t *target) client() redis.UniversalClient {
	var rdb redis.UniversalClient
	// ContextTimeoutEnabled: a command's deadline (--wait, say) bounds
	// every request, also one a stopped server never answers.
	if t.cluster != nil {
		opt := *t.cluster
		opt.ContextTimeoutEnabled = true
		rdb = redis.NewClusterClient(&opt)
	} else {
		opt := *t.single
		opt.ContextTimeoutEnabled = true
		rdb = redis.NewClient(&opt)
	}
	t.mu.Lock()
	t.clients = append(t.clients, rdb)
	t.mu.Unlock()
	return rdb
}

// clientsN returns n new clients.
func (t *target) clientsN(n int) []redis.UniversalClient {
	rdbs := make([]redis.UniversalClient, n)
	for i := range rdbs {
		rdbs[i] = t.client()
	}
	return rdbs
}

// advance moves the embedded server's key expiry on with real time until
// ctx ends: miniredis expires keys only when told that time has passed.
func (t *target) advance(ctx context.Context) {
	const step = 20 * time.Millisecond
	ticker := time.NewTicker(step)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			t.mini.FastForward(now.Sub(last))
			last = now
		}
	}
}

// tidyTimeout bounds how long close waits for the library's clean-ups.
const tidyTimeout = 2 * time.Second

// close waits for the clean-ups the library left running in the
// background (the removal of a waiter's place in line after a Lock gave
// up at its deadline or on Ctrl-C, the give-back of an acquisition whose
// reply came late), for at most tidyTimeout, then closes every client and
// stops the embedded server. A process that exited before they ran would
// leave its place in line to lapse, and the next holder would wait for
// that. Every command that opens a target closes it on every exit path.
func (t *target) close() {
	ctx, cancel := context.WithTimeout(context.Background(), tidyTimeout)
	perclient.AwaitTidied(ctx)
	cancel()
	t.mu.Lock()
	clients := t.clients
	t.clients = nil
	t.mu.Unlock()
	for _, rdb := range clients {
		_ = rdb.Close()
	}
	if t.mini != nil {
		t.mini.Close()
	}
}
