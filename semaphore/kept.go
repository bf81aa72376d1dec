package semaphore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/internal/watchdog"
)

// The permits of a Leased that the watchdog keeps alive (lease 0).

// kept is a permit the watchdog keeps alive.
type kept struct {
	client *internal.Client // the reference that keeps the watchdog attached
	hold   *watchdog.Hold
	done   chan struct{} // closed by whoever deletes it from Leased.kept
}

// keep hands the permit id, acquired or renewed at sent, to the watchdog,
// or records the renewal if the watchdog keeps it already.
func (l *Leased) keep(id string, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.kept[id]; k != nil {
		k.hold.Touch(sent)
		return
	}
	k := &kept{client: internal.Acquire(l.rdb), done: make(chan struct{})}
	k.hold = k.client.Watchdog.Add(watchdog.Entry{
		Lease: l.cfg.watchdogTimeout,
		Renew: func(ctx context.Context, s redis.Scripter) func() (bool, error) {
			return script.LeasedRenew(ctx, s, l.keys, id, l.cfg.watchdogTimeout, l.sharded).Result
		},
		Lost: func(error) { l.lost(id, k) }, // expired, or released elsewhere
	}, sent)
	l.kept[id] = k
}

// forget stops the watchdog from renewing the permit id.
func (l *Leased) forget(id string) {
	l.mu.Lock()
	k := l.kept[id]
	delete(l.kept, id)
	l.mu.Unlock()
	if k != nil {
		k.hold.Remove()
		k.client.Release()
		close(k.done)
	}
}

// lost forgets the permit id after the watchdog gave up on k, unless it was
// forgotten already. It runs on the watchdog goroutine and does not block.
func (l *Leased) lost(id string, k *kept) {
	l.mu.Lock()
	mine := l.kept[id] == k
	if mine {
		delete(l.kept, id)
	}
	l.mu.Unlock()
	// The watchdog has dropped the hold already; Remove wakes its loop,
	// which otherwise would not notice at once that no hold is left.
	k.hold.Remove()
	if mine {
		k.client.Release()
		close(k.done)
	}
}

// Done returns a channel that is closed when this handle's watchdog stops
// keeping the permit id alive: after Release of id through this handle
// (successful or not), a Renew of it with a positive lease, or when the
// watchdog gives it up because a renewal found it gone or renewals kept
// failing until its lease ran out. For an id the watchdog does not keep
// alive for this handle (acquired with a positive lease, or through
// another handle) it returns a closed channel.
func (l *Leased) Done(id string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.kept[id]; k != nil {
		return k.done
	}
	return closed
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
