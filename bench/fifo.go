package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// bareFIFO is a minimal strictly fair lock through Redis, written for the
// page as a reference for redisync fairlock: the release makes the first
// waiter in line the holder and publishes to it, and the waiter's
// process, parked on its client's one subscription, goes on when the
// message arrives. Every handoff between holders is one script and one
// message, and the line alone decides who is next. It has no watchdog,
// nothing for crashed waiters, and nothing for a lost message but a check
// every second; a wait whose ctx ends leaves the line, or passes on a
// grant that came meanwhile. So its rows show what a fair lock this simple
// reaches in the same run, not a bound: a fair lock can still save the
// message when the next in line is on the releaser's client.
const bareFIFO = "bare FIFO lock"

// fifoAcquire takes the lock (KEYS[1]) for token ARGV[1] when it is free,
// else puts the token at the end of the line (KEYS[2]). The lock is never
// left free while the line has a token, so a newcomer never passes one.
var fifoAcquire = redis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) then return 1 end
redis.call('rpush', KEYS[2], ARGV[1])
return 0`)

// fifoRelease, for the holder ARGV[1], makes the first token in line the
// holder and publishes it on its handle's channel (ARGV[3] and the
// token's handle id), or frees the lock when nobody waits; for a token
// that does not hold the lock, it takes the token out of the line (a wait
// that ended). It returns 1 when ARGV[1] held the lock.
var fifoRelease = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
	local next = redis.call('lpop', KEYS[2])
	if next then
		redis.call('set', KEYS[1], next, 'px', ARGV[2])
		redis.call('publish', ARGV[3] .. string.match(next, '^[^.]+'), next)
	else
		redis.call('del', KEYS[1])
	end
	return 1
end
redis.call('lrem', KEYS[2], 0, ARGV[1])
return 0`)

// fifoLocker is a handle on a bare FIFO lock. Its tokens are its id and
// the number of its Lock call: a grant names the wait it is for, so that
// a message that comes after its wait ended is not taken for a later one.
type fifoLocker struct {
	rdb      *redis.Client
	key      string
	line     string
	channels string // the prefix of every handle's channel on the lock
	id       string
	grants   chan string // the tokens published on the handle's channel
	err      error       // from subscribing; Lock returns it
	n        int
	token    string // the held token
}

func fifoLine(key string) string { return key + ":line" }

// fifoLease is leaseTTL in milliseconds, as the scripts take it.
var fifoLease = strconv.FormatInt(leaseTTL.Milliseconds(), 10)

func newBareFIFO(rdb *redis.Client, key string) locker {
	l := &fifoLocker{rdb: rdb, key: key, line: fifoLine(key), channels: key + ":to:",
		id: rand.Text(), grants: make(chan string, 1)}
	l.err = fifoClientOf(rdb).subscribe(l.channels+l.id, l.grants)
	return l
}

func (l *fifoLocker) Lock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	l.n++
	token := l.id + "." + strconv.Itoa(l.n)
	took, err := fifoAcquire.Run(ctx, l.rdb, []string{l.key, l.line}, token, fifoLease).Int()
	if err != nil {
		return err
	}
	if took == 1 {
		l.token = token
		return nil
	}
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for took != 1 {
		select {
		case t := <-l.grants:
			if t == token {
				took = 1
			}
		case <-check.C:
			// A message lost: ask who holds the lock.
			if v, err := l.rdb.Get(ctx, l.key).Result(); err == nil && v == token {
				took = 1
			}
		case <-ctx.Done():
			// Out of the line, or, granted meanwhile, on to the next.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
			defer cancel()
			if _, err := l.release(cctx, token); err != nil {
				return err
			}
			return ctx.Err()
		}
	}
	l.token = token
	return nil
}

func (l *fifoLocker) Unlock(ctx context.Context) error {
	token := l.token
	l.token = ""
	held, err := l.release(ctx, token)
	if err == nil && !held {
		err = fmt.Errorf("%s: unlock %q: not held", bareFIFO, l.key)
	}
	return err
}

// release hands the lock on if token holds it, and reports whether it
// did; else it takes token out of the line.
func (l *fifoLocker) release(ctx context.Context, token string) (bool, error) {
	held, err := fifoRelease.Run(ctx, l.rdb, []string{l.key, l.line}, token, fifoLease, l.channels).Int()
	return held == 1, err
}

// fifoParked waits until a waiter stands in the line of the bare FIFO
// lock called key: its handle subscribed when it was made.
func fifoParked(ctx context.Context, ctl *redis.Client, key string) error {
	return poll(ctx, 10*time.Second, func() bool { return ctl.LLen(ctx, fifoLine(key)).Val() > 0 })
}

// fifoClient is the one subscription of the bare FIFO handles of one
// go-redis client, and where its messages go.
type fifoClient struct {
	rdb *redis.Client
	ps  *redis.PubSub

	mu   sync.Mutex
	subs map[string]chan string // by channel
}

var fifoClients perClient[*redis.Client, *fifoClient]

// fifoClientOf returns rdb's fifoClient, made and started on first use.
func fifoClientOf(rdb *redis.Client) *fifoClient {
	c, _ := fifoClients.get(rdb, func() (*fifoClient, error) {
		c := &fifoClient{rdb: rdb, ps: rdb.Subscribe(context.Background()), subs: make(map[string]chan string)}
		go c.route(c.ps.Channel())
		return c, nil
	})
	return c
}

// route hands each message to its handle. A message that finds the last
// one still there replaces it: only the newest can be for a wait under
// way.
func (c *fifoClient) route(msgs <-chan *redis.Message) {
	for m := range msgs {
		c.mu.Lock()
		ch := c.subs[m.Channel]
		c.mu.Unlock()
		for ch != nil {
			select {
			case ch <- m.Payload:
				ch = nil
			default:
				select {
				case <-ch:
				default:
				}
			}
		}
	}
}

// subscribe sends the messages of channel to grants, once Redis confirms
// the subscription.
func (c *fifoClient) subscribe(channel string, grants chan string) error {
	c.mu.Lock()
	c.subs[channel] = grants
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	err := poll(ctx, 10*time.Second, func() bool { return c.rdb.PubSubNumSub(ctx, channel).Val()[channel] > 0 })
	if err != nil {
		return errors.Join(fmt.Errorf("%s: subscribe %s", bareFIFO, channel), err)
	}
	return nil
}

// closeBareFIFO ends every client's subscription.
func closeBareFIFO() { fifoClients.drain(func(c *fifoClient) { _ = c.ps.Close() }) }
