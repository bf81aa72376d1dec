package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/watchdog"
	"github.com/redisync/redisync/lua"
)

// hold is one continuous hold of the lock by the handle, in either or both
// modes: it begins with the first RLock or Lock and ends when the handle
// holds nothing, so a downgrade (write Unlock while reading) continues it.
type hold struct {
	reads  int64 // read levels, guarded by RWMutex.mu
	writes int64 // write levels, guarded by RWMutex.mu
	done   chan struct{}
	client *internal.Client
	wd     *watchdog.Hold
}

// count returns the handle's local hold count in mode m.
func (rw *RWMutex) count(m mode) int64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.hold == nil {
		return 0
	}
	if m == read {
		return rw.hold.reads
	}
	return rw.hold.writes
}

// acquired records a successful acquisition, sent at sent, after which
// Redis counts reads and writes for the handle.
func (rw *RWMutex) acquired(reads, writes int64, sent time.Time) {
	rw.mu.Lock()
	h := rw.hold
	if h != nil && reads+writes > 1 {
		h.reads, h.writes = reads, writes
		h.wd.Touch(sent)
		rw.mu.Unlock()
		return
	}
	rw.mu.Unlock()
	if h != nil {
		// Redis says this is a first acquisition: the previous hold was
		// lost before the watchdog noticed.
		rw.end(h, ErrLost)
	}
	h = &hold{reads: reads, writes: writes, done: make(chan struct{}), client: internal.Acquire(rw.rdb)}
	h.wd = h.client.Watchdog.Add(rw.entry(h), sent)
	rw.mu.Lock()
	rw.hold = h
	rw.mu.Unlock()
}

// settle records the hold counts Redis reported after a release: when
// nothing is left, the hold ends.
func (rw *RWMutex) settle(h *hold, reads, writes int64) {
	if reads+writes == 0 {
		rw.end(h, nil)
		return
	}
	rw.mu.Lock()
	h.reads, h.writes = reads, writes
	rw.mu.Unlock()
}

// entry is the watchdog's view of hold h: renew whatever the handle holds.
func (rw *RWMutex) entry(h *hold) watchdog.Entry {
	e := watchdog.Entry{
		Lease: rw.cfg.lease(),
		Lost: func(err error) {
			rw.end(h, fmt.Errorf("%w: %w", ErrLost, err))
		},
	}
	if rw.cfg.leaseTime == 0 {
		e.Renew = func(ctx context.Context, s redis.Scripter) func() (bool, error) {
			return lua.RWLockRenew(ctx, s, rw.keys, rw.owner, e.Lease).Result
		}
	}
	return e
}

// end finishes hold h if it is still current: Done closes, renewals stop,
// and for a loss (lost != nil) the WithOnLost hook runs.
func (rw *RWMutex) end(h *hold, lost error) {
	rw.mu.Lock()
	if rw.hold != h {
		rw.mu.Unlock()
		return
	}
	rw.hold = nil
	rw.mu.Unlock()
	h.wd.Remove()
	h.client.Release()
	close(h.done)
	if lost != nil && rw.cfg.onLost != nil {
		rw.cfg.onLost(rw.wrap("hold", lost))
	}
}

// Done returns a channel that is closed when the handle's current hold
// ends: when it no longer holds the lock in either mode after RUnlock or
// Unlock, after a ForceUnlock, when its lease runs out, or on a loss
// noticed by the watchdog. A downgrade does not end the hold. When the
// handle holds nothing it returns a closed channel.
func (rw *RWMutex) Done() <-chan struct{} {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.hold == nil {
		return closed
	}
	return rw.hold.done
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
