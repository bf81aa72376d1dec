package rlock

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// Unlock releases one level of the hold ctx carries (see [Mutex.Do]), else the
// handle's plain hold, whichever goroutine took it. When the last level is
// released the lock is granted to the first live waiter in line (or is
// free when nobody waits). Unlock by a handle that does not hold the lock
// (never locked, already released, or its lease ran out) returns an error
// wrapping [ErrNotHeld] and changes nothing.
//
// When the reply of an unlock is lost, Unlock retries it, knowing that the
// first may have gone through: the retry releases nothing more and reports
// success. If Unlock of the last level fails nonetheless, the handle stops
// renewing the lease and Done closes: Redis frees the lock when the lease
// runs out, if not before; the handle sends the release again before its next
// Lock.
//
// Unlock runs even when ctx is done or its deadline has passed: it uses ctx's
// values without its cancellation, bounded by a timeout of its own (5s),
// so a deferred Unlock after a cancelled request still frees the lock at once.
func (m *Mutex) Unlock(ctx context.Context) error { return m.l.Unlock(ctx, hold.Exclusive) }

// ForceUnlock deletes the lock whoever holds it and wakes the waiter first
// in line. It reports whether there was a lock to delete, also when its
// reply was lost and it ran again. A holder on another handle learns of it
// at its next renewal: its Done closes.
//
// It deletes the holds it read and no others: a copy of it
// that Redis runs late (sent before a network stall, run after it) finds
// the lock released and taken again, and deletes nothing.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) { return m.l.ForceUnlock(ctx) }

// IsLocked reports whether any handle holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) { return m.l.IsLocked(ctx) }

// IsHeld reports whether this handle holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) { return m.l.IsHeld(ctx) }

// HoldCount returns the depth of the hold ctx carries (see [Mutex.Do]): how
// many levels Lock and Do took through it. Without one it returns 1 when the
// handle has a plain hold (taken by Lock with a ctx that carries none), else
// 0. It does no I/O.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) { return m.l.HoldCount(ctx) }

// TTL returns the remaining lease of the lock, whoever holds it: 0 when it
// is not locked.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) { return m.l.TTL(ctx) }

// Done returns a channel that is closed when the handle's current hold
// ends: the final Unlock, a ForceUnlock, the lease running out, or a loss
// noticed by the watchdog. When the handle holds nothing it returns a
// closed channel. It belongs to the handle's hold in Redis, not to one
// goroutine's critical section: a hold that an Unlock passes to another
// goroutine of the handle (see the package doc) goes on, and its Done
// stays open.
func (m *Mutex) Done() <-chan struct{} { return m.l.Done() }

// Token returns the fencing token of the current hold (see [WithFencing]): 0
// without fencing or when the handle holds nothing.
func (m *Mutex) Token() uint64 { return m.l.Token() }

// Do locks m (or re-enters the hold ctx carries), runs fn with a ctx that
// carries the hold and is cancelled if the hold is lost, and unlocks. Lock,
// TryLock and Do with fn's ctx (or one derived from it) re-enter the hold;
// a plain Unlock does not release it. Do returns the error of Lock, else
// that of fn, else that of Unlock.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return m.l.Do(ctx, hold.Exclusive, fn)
}
