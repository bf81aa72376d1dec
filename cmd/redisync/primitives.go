package main

import (
	"context"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// primitive is one of redisync's synchronizers as the tool drives it. Each
// lives in a file of its own (prim_*.go) that registers it from init. The
// demo, bench and unlock commands find everything they need here:
//
//   - the oversell demo has a row for every primitive: with stock when the
//     primitive keeps the stock itself (a semaphore's permits), else with
//     newMutex guarding a read-modify-write of a stock key;
//   - the stampede demo has a row for every lock (forceUnlock set);
//   - bench runs every primitive with newMutex.
type primitive struct {
	name  string // in tables and in bench --kinds
	order int    // position in tables

	// newMutex returns a handle for one worker that excludes every other
	// handle on name (nil: the primitive is not used as a mutex).
	newMutex func(rdb redis.UniversalClient, name string) mutex
	// prepare readies name before handles of newMutex use it, e.g. gives a
	// semaphore its one permit (nil: nothing to do).
	prepare func(ctx context.Context, rdb redis.UniversalClient, name string) error

	// stock keeps the oversell demo's stock in the primitive itself.
	stock *stockKeeper

	// kind is what inspect calls this primitive's data; forceUnlock
	// deletes such a lock whoever holds it and wakes its waiters (nil: not
	// a lock), reporting whether there was one.
	kind        string
	forceUnlock func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error)
}

// mutex is a lock handle as the demo and bench drive it.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// stockKeeper keeps a stock of items as permits.
type stockKeeper struct {
	// fill sets the stock to n items.
	fill func(ctx context.Context, rdb redis.UniversalClient, name string, n int) error
	// take takes one item, reporting false when none is left.
	take func(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error)
}

// registered holds every primitive built into this binary.
var registered []primitive

// register adds p; prim_*.go files call it from init.
func register(p primitive) { registered = append(registered, p) }

// primitives returns the built-in primitives in table order.
func primitives() []primitive {
	ps := slices.Clone(registered)
	slices.SortStableFunc(ps, func(a, b primitive) int { return a.order - b.order })
	return ps
}

// primitiveNames lists the names of ps, comma-separated.
func primitiveNames(ps []primitive) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return strings.Join(names, ",")
}
