package rlock

import (
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/hold"
)

// ErrNotHeld is returned by Unlock when the handle does not hold the lock.
// It is the same value in every redisync package.
var ErrNotHeld = errs.ErrNotHeld

// ErrLost is the reason a hold was lost, passed to the [WithOnLost] hook.
var ErrLost = errs.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for a
// key of another type, or for a read-write lock's name (see package rwlock).
var ErrWrongType = errs.ErrWrongType

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// Mutex is a reentrant distributed mutex. A Mutex is shared by goroutines
// the way a sync.Mutex is; re-entry goes through the ctx Do hands to fn
// (see the package doc). It is safe for concurrent use.
type Mutex struct {
	l *hold.Lock
	// engine lets package multilock watch the lock's releases and read
	// its lease without adding to the API (see hold.Handle).
	engine
}

type engine = hold.Handle
