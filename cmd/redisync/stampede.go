package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// stampedeConfig sizes the stampede scenario.
type stampedeConfig struct {
	requests  int           // concurrent requests for the cold entry
	load      time.Duration // how long one database load takes
	instances []redis.UniversalClient
	prefix    string
}

// stampedeRow is the outcome of one variant.
type stampedeRow struct {
	variant string
	locked  bool // must load exactly once
	loads   int
	wall    time.Duration
}

// stampedeVariant is one way of serving the requests; lock is nil for no
// lock.
type stampedeVariant struct {
	name string
	lock *primitive
}

// stampedeVariants are no lock and one double-checked row per lock.
func stampedeVariants() []stampedeVariant {
	vs := []stampedeVariant{{name: "no lock"}}
	for _, p := range primitives() {
		if p.forceUnlock != nil && p.newMutex != nil {
			vs = append(vs, stampedeVariant{name: p.name + " (double-checked)", lock: &p})
		}
	}
	return vs
}

// category is the cache-aside entry every request wants: the category
// tree of a shop, expensive to load from the database.
type category struct {
	key   string
	lock  string
	load  time.Duration
	loads atomic.Int64
}

// get serves one request: from the cache if it is there; else, under m
// (nil: no lock), check the cache again and load from the database only
// if it is still missing.
func (c *category) get(ctx context.Context, rdb redis.UniversalClient, m mutex) error {
	if hit, err := c.cached(ctx, rdb); hit || err != nil {
		return err
	}
	if m == nil {
		return c.rebuild(ctx, rdb)
	}
	return locked(ctx, m, func() error {
		hit, err := c.cached(ctx, rdb) // the second check: someone may have loaded it
		if hit || err != nil {
			return err
		}
		return c.rebuild(ctx, rdb)
	})
}

func (c *category) cached(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	n, err := rdb.Exists(ctx, c.key).Result()
	return n == 1, err
}

// rebuild loads the entry from the "database" and caches it.
func (c *category) rebuild(ctx context.Context, rdb redis.UniversalClient) error {
	c.loads.Add(1)
	if err := pause(ctx, c.load); err != nil {
		return err
	}
	return rdb.Set(ctx, c.key, "books>fiction>crime", demoKeyTTL).Err()
}

// runStampede runs one variant: all requests ask for the cold entry at
// once.
func runStampede(ctx context.Context, cfg *stampedeConfig, v stampedeVariant, idx int) (stampedeRow, error) {
	c := &category{
		key:  fmt.Sprintf("%sstampede:%d:category", cfg.prefix, idx),
		lock: fmt.Sprintf("%sstampede:%d:lock", cfg.prefix, idx),
		load: cfg.load,
	}
	row := stampedeRow{variant: v.name, locked: v.lock != nil}
	if v.lock != nil && v.lock.prepare != nil {
		if err := v.lock.prepare(ctx, cfg.instances[0], c.lock); err != nil {
			return row, fmt.Errorf("%s: %w", v.name, err)
		}
	}
	wall, err := crowd(ctx, cfg.instances, cfg.requests, func(ctx context.Context, rdb redis.UniversalClient, _ int) error {
		var m mutex
		if v.lock != nil {
			m = v.lock.newMutex(rdb, c.lock) // a handle per request
		}
		return c.get(ctx, rdb, m)
	})
	row.wall, row.loads = wall, int(c.loads.Load())
	if err != nil {
		return row, fmt.Errorf("%s: %w", row.variant, err)
	}
	return row, nil
}
