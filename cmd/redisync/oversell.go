package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// demoKeyTTL bounds how long a demo key outlives a demo that crashed
// before cleaning up.
const demoKeyTTL = 10 * time.Minute

// oversellConfig sizes the oversell scenario.
type oversellConfig struct {
	stock     int           // items in stock
	buyers    int           // one purchase attempt each
	think     time.Duration // between reading the stock and writing it back
	instances []redis.UniversalClient
	prefix    string // the run's key prefix
}

// oversellRow is the outcome of one variant.
type oversellRow struct {
	variant     string
	distributed bool // must sell exactly the stock
	sold        int
	wall        time.Duration
}

func (r oversellRow) oversold(stock int) int { return max(r.sold-stock, 0) }

// oversellVariant is one way of guarding the purchases.
type oversellVariant struct {
	name        string
	distributed bool
	// setup prepares a run and returns the purchase of buyer i on rdb.
	setup func(ctx context.Context, s *shop) (buyFunc, error)
}

// buyFunc makes buyer i's one purchase attempt on the instance client rdb;
// it reports whether it sold an item.
type buyFunc func(ctx context.Context, rdb redis.UniversalClient, i int) (bool, error)

// oversellVariants are the local lock, no lock, and one row per primitive.
func oversellVariants() []oversellVariant {
	vs := []oversellVariant{
		{name: "local sync.Mutex", setup: setupLocalMutex},
		{name: "no lock", setup: func(_ context.Context, s *shop) (buyFunc, error) {
			return func(ctx context.Context, rdb redis.UniversalClient, _ int) (bool, error) {
				return s.buy(ctx, rdb)
			}, nil
		}},
	}
	for _, p := range primitives() {
		switch {
		case p.stock != nil:
			vs = append(vs, oversellVariant{name: p.name + " (stock as permits)", distributed: true, setup: stockSetup(p)})
		case p.newMutex != nil:
			vs = append(vs, oversellVariant{name: p.name, distributed: true, setup: mutexSetup(p)})
		}
	}
	return vs
}

// shop is one variant's run: a stock key, a lock name and a sales count.
type shop struct {
	cfg      *oversellConfig
	stockKey string
	lockName string
	sold     atomic.Int64
}

// buy is the unprotected read-modify-write of the stock: read it, think,
// write it back one lower. Two buyers interleaving here sell one item
// twice.
func (s *shop) buy(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	n, err := rdb.Get(ctx, s.stockKey).Int()
	if err != nil || n <= 0 {
		return false, err
	}
	if err := pause(ctx, s.cfg.think); err != nil {
		return false, err
	}
	if err := rdb.Set(ctx, s.stockKey, n-1, demoKeyTTL).Err(); err != nil {
		return false, err
	}
	s.sold.Add(1)
	return true, nil
}

// buyUnder runs buy while holding m.
func (s *shop) buyUnder(ctx context.Context, rdb redis.UniversalClient, m mutex) (bool, error) {
	var sold bool
	err := locked(ctx, m, func() (err error) {
		sold, err = s.buy(ctx, rdb)
		return err
	})
	return sold, err
}

// setupLocalMutex guards each instance's buyers with that instance's own
// sync.Mutex: right within one process, useless across processes.
func setupLocalMutex(_ context.Context, s *shop) (buyFunc, error) {
	locks := make([]sync.Mutex, len(s.cfg.instances))
	return func(ctx context.Context, rdb redis.UniversalClient, i int) (bool, error) {
		mu := &locks[i%len(locks)]
		mu.Lock()
		defer mu.Unlock()
		return s.buy(ctx, rdb)
	}, nil
}

func mutexSetup(p primitive) func(ctx context.Context, s *shop) (buyFunc, error) {
	return func(ctx context.Context, s *shop) (buyFunc, error) {
		if p.prepare != nil {
			if err := p.prepare(ctx, s.cfg.instances[0], s.lockName); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context, rdb redis.UniversalClient, _ int) (bool, error) {
			return s.buyUnder(ctx, rdb, p.newMutex(rdb, s.lockName)) // a handle per buyer
		}, nil
	}
}

func stockSetup(p primitive) func(ctx context.Context, s *shop) (buyFunc, error) {
	return func(ctx context.Context, s *shop) (buyFunc, error) {
		if err := p.stock.fill(ctx, s.cfg.instances[0], s.lockName, s.cfg.stock); err != nil {
			return nil, err
		}
		return func(ctx context.Context, rdb redis.UniversalClient, _ int) (bool, error) {
			ok, err := p.stock.take(ctx, rdb, s.lockName)
			if ok {
				s.sold.Add(1)
			}
			return ok, err
		}, nil
	}
}

// runOversell runs one variant: all buyers try to buy at once.
func runOversell(ctx context.Context, cfg *oversellConfig, v oversellVariant, idx int) (oversellRow, error) {
	s := &shop{
		cfg:      cfg,
		stockKey: fmt.Sprintf("%soversell:%d:stock", cfg.prefix, idx),
		lockName: fmt.Sprintf("%soversell:%d:lock", cfg.prefix, idx),
	}
	row := oversellRow{variant: v.name, distributed: v.distributed}
	if err := cfg.instances[0].Set(ctx, s.stockKey, cfg.stock, demoKeyTTL).Err(); err != nil {
		return row, err
	}
	buy, err := v.setup(ctx, s)
	if err != nil {
		return row, fmt.Errorf("%s: %w", v.name, err)
	}
	row.wall, err = crowd(ctx, cfg.instances, cfg.buyers, func(ctx context.Context, rdb redis.UniversalClient, i int) error {
		_, err := buy(ctx, rdb, i)
		return err
	})
	row.sold = int(s.sold.Load())
	if err != nil {
		return row, fmt.Errorf("%s: %w", v.name, err)
	}
	return row, nil
}
