package rwlock

import (
	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/hold"
)

// ErrNotHeld is returned by RUnlock and Unlock when the handle does not
// hold the lock in that mode. It is the same value in every redisync
// package.
var ErrNotHeld = internal.ErrNotHeld

// ErrUpgradeNotSupported is returned by Lock and TryLock on a handle that
// holds a read lock but not the write lock: waiting for the write lock
// would wait for itself.
var ErrUpgradeNotSupported = internal.ErrUpgradeNotSupported

// ErrLost is the reason a hold was lost, passed to the WithOnLost hook.
var ErrLost = internal.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type, or for a lock of another kind.
var ErrWrongType = internal.ErrWrongType

// RWMutex is a distributed reader/writer mutual exclusion lock: many
// readers or one writer. An RWMutex is a handle with its own owner id: a
// handle that holds the lock in one mode re-enters it in that mode, and a
// write holder may also take read holds. Goroutines that must exclude each
// other use separate handles. An RWMutex is safe for concurrent use.
//
// The handle's hold spans both modes (hold.Exclusive is the write side,
// hold.Shared the read side): one watchdog entry renews whatever the
// handle holds, and one Done closes when it holds nothing.
type RWMutex struct {
	l *hold.Lock
}
