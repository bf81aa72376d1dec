package rwlock

import (
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
)

// ErrNotHeld is returned by RUnlock and Unlock when the handle does not
// hold the lock in that mode. It is the same value in every redisync
// package.
var ErrNotHeld = errs.ErrNotHeld

// ErrUpgradeNotSupported is returned by Lock and TryLock with a ctx that
// carries a read hold of the lock (see [RWMutex.RDo]): waiting for the write
// lock would wait for itself.
var ErrUpgradeNotSupported = errs.ErrUpgradeNotSupported

// ErrLost is the reason a hold was lost, passed to the [WithOnLost] hook.
var ErrLost = errs.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type, or for a lock of another kind.
var ErrWrongType = errs.ErrWrongType

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// RWMutex is a distributed reader/writer mutual exclusion lock: many
// readers or one writer. An RWMutex is shared by goroutines the way a
// sync.RWMutex is (see the package doc, Ownership); re-entry and downgrade
// go through the ctx Do and RDo hand to fn. It is safe for concurrent use.
type RWMutex struct {
	l *hold.Lock
	s *sides
	// engine lets package multilock watch the lock's releases and read
	// its lease without adding to the API (see hold.Handle).
	engine
}

type engine = hold.Handle
