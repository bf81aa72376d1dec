package fairlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/lua"
)

// Unlock releases one level of the handle's hold. When the last level is
// released the lock is free and the waiter first in line, and only that
// waiter, is woken to take it. Unlock by a handle that does not hold the
// lock (never locked, already released, or its lease ran out) returns an
// error wrapping ErrNotHeld and changes nothing.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.op.Acquire(ctx, 1); err != nil {
		return m.wrap("unlock", err)
	}
	defer m.op.Release(1)
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	var expect int64
	if h != nil {
		expect = h.count
	}
	n, err := lua.FairUnlock(ctx, m.rdb, m.keys, m.owner, m.cfg.lease(), m.sharded, expect).Result()
	if err != nil {
		return m.wrap("unlock", err)
	}
	switch {
	case n == lua.UnlockMismatch:
		// A retry of an unlock that went through before its reply was
		// lost: that unlock is this one.
		n = expect - 1
	case n == lua.UnlockNotHeld:
		if h != nil {
			m.end(h, ErrLost)
		}
		return m.wrap("unlock", ErrNotHeld)
	}
	if h == nil {
		return nil
	}
	if n == 0 {
		m.end(h, nil)
		return nil
	}
	m.mu.Lock()
	h.count = n
	m.mu.Unlock()
	return nil
}

// ForceUnlock deletes the lock whoever holds it and wakes the waiter first
// in line; the line keeps its order. It reports whether there was a lock
// to delete. A holder on another handle learns of it at its next renewal:
// its Done closes.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	ok, err := lua.FairForceUnlock(ctx, m.rdb, m.keys, m.sharded).Result()
	if err != nil {
		return false, m.wrap("force unlock", err)
	}
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h != nil && ok {
		m.end(h, nil)
	}
	return ok, nil
}

// IsLocked reports whether any handle holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	n, err := m.rdb.Exists(ctx, m.keys.Lock).Result()
	return n == 1, m.wrap("is locked", err)
}

// IsHeld reports whether this handle holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	ok, err := m.rdb.HExists(ctx, m.keys.Lock, m.owner).Result()
	return ok, m.wrap("is held", err)
}

// HoldCount returns how many times this handle holds the lock: 0 when it
// does not hold it.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	n, err := m.rdb.HGet(ctx, m.keys.Lock, m.owner).Int()
	if internal.IsNil(err) {
		return 0, nil
	}
	return n, m.wrap("hold count", err)
}

// TTL returns the remaining lease of the lock, whoever holds it: 0 when it
// is not locked.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	d, err := m.rdb.PTTL(ctx, m.keys.Lock).Result()
	if err != nil {
		return 0, m.wrap("ttl", err)
	}
	return max(d, 0), nil
}

// Done returns a channel that is closed when the handle's current hold
// ends: the final Unlock, a ForceUnlock, the lease running out, or a loss
// noticed by the watchdog. When the handle holds nothing it returns a
// closed channel.
func (m *Mutex) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return closed
	}
	return m.hold.done
}

// Token returns the fencing token of the current hold (see WithFencing): 0
// without fencing or when the handle holds nothing.
func (m *Mutex) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return 0
	}
	return m.hold.token
}

// Do locks m, runs fn with a context that is cancelled if the hold is lost,
// and unlocks. It returns the error of Lock, else that of fn, else that of
// Unlock.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := m.Lock(ctx); err != nil {
		return err
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	if h := m.hold; h != nil {
		h.ends = append(h.ends, cancel)
	} else {
		cancel() // lost already
	}
	m.mu.Unlock()
	err := fn(fctx)
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer ucancel()
	if uerr := m.Unlock(uctx); err == nil {
		err = uerr
	}
	return err
}

// end finishes hold h if it is still current: Done closes, renewals stop,
// and for a loss (lost != nil) the WithOnLost hook runs.
func (m *Mutex) end(h *hold, lost error) {
	m.mu.Lock()
	if m.hold != h {
		m.mu.Unlock()
		return
	}
	m.hold = nil
	m.mu.Unlock()
	h.wd.Remove()
	h.client.Release()
	close(h.done)
	for _, cancel := range h.ends {
		cancel()
	}
	if lost != nil && m.cfg.onLost != nil {
		m.cfg.onLost(m.wrap("hold", lost))
	}
}

func (m *Mutex) wrap(op string, err error) error {
	return internal.Wrap("fairlock", op, m.name, err)
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
