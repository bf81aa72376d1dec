package observe

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/redis/go-redis/v9"
)

// ErrAttached is returned by Attach for a client that has an Observer
// already.
var ErrAttached = errors.New("observe: the client has an observer already")

// The registry maps a client's address to its entry. Addresses are keys,
// not weak pointers, so that Of, on the path of every acquire, neither
// makes a weak pointer nor boxes one in an interface; the entry's weak
// pointer tells whether the client at that address is still the one the
// entry was made for (a live object has its address to itself).
var (
	mu       sync.RWMutex // guards entries
	entries  = make(map[uintptr]*entry)
	attached atomic.Int32 // how many entries there are: Of's fast path when 0
)

type entry struct {
	o     Observer
	alive func() bool // whether the client is not garbage yet
}

// Attach makes o hear of everything redisync does on rdb, from now on,
// for as long as rdb lives. It does no I/O. It returns ErrAttached if rdb
// has an Observer already, and an error for a client type it does not
// know (it knows *redis.Client, which NewFailoverClient returns too,
// *redis.ClusterClient and *redis.Ring).
//
// o must not refer to rdb: the registry refers to rdb weakly, so that
// attaching an Observer does not keep a client reachable that the
// application has dropped, and an o that refers to rdb would.
func Attach(rdb redis.UniversalClient, o Observer) error {
	if o == nil {
		return errors.New("observe: Attach with nil observer")
	}
	switch c := rdb.(type) {
	case *redis.Client:
		return attach(c, o)
	case *redis.ClusterClient:
		return attach(c, o)
	case *redis.Ring:
		return attach(c, o)
	}
	return fmt.Errorf("observe: Attach with client type %T: only *redis.Client, *redis.ClusterClient and *redis.Ring are supported", rdb)
}

func attach[T any](c *T, o Observer) error {
	if c == nil {
		return errors.New("observe: Attach with nil client")
	}
	key := uintptr(unsafe.Pointer(c))
	wp := weak.Make(c)
	e := &entry{o: o, alive: func() bool { return wp.Value() != nil }}
	mu.Lock()
	defer mu.Unlock()
	if old := entries[key]; old != nil && old.alive() {
		return ErrAttached
	}
	entries[key] = e
	attached.Store(int32(len(entries)))
	// Once c is garbage, its entry goes; unless a client allocated at the
	// same address since has an entry of its own.
	runtime.AddCleanup(c, forget, cleanupArg{key, e})
	return nil
}

type cleanupArg struct {
	key uintptr
	e   *entry
}

func forget(a cleanupArg) {
	mu.Lock()
	defer mu.Unlock()
	if entries[a.key] == a.e {
		delete(entries, a.key)
		attached.Store(int32(len(entries)))
	}
}

// Of returns the Observer attached to rdb; nil if none. It allocates
// nothing, and when no Observer is attached to any client it costs one
// atomic load.
func Of(rdb redis.UniversalClient) Observer {
	if attached.Load() == 0 {
		return nil
	}
	var key uintptr
	switch c := rdb.(type) {
	case *redis.Client:
		key = uintptr(unsafe.Pointer(c))
	case *redis.ClusterClient:
		key = uintptr(unsafe.Pointer(c))
	case *redis.Ring:
		key = uintptr(unsafe.Pointer(c))
	default:
		return nil
	}
	mu.RLock()
	e := entries[key]
	mu.RUnlock()
	if e == nil || !e.alive() {
		return nil
	}
	return e.o
}
