package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/latch"
)

// batchConfig sizes the batch scenario.
type batchConfig struct {
	jobs      int           // jobs in the batch
	work      time.Duration // how long a job takes, on average
	instances []redis.UniversalClient
	prefix    string
}

// batchPoll is how often the polling coordinators read the done counter:
// a common choice, and a latch's default safety poll would be ten times
// longer.
const batchPoll = 100 * time.Millisecond

// batchRow is the outcome of one variant.
type batchRow struct {
	variant string
	early   int           // coordinators that went on before every job was done
	lag     time.Duration // from the last job done to the last coordinator going on
	reads   int64         // counter reads by the polling coordinators; 0: they do not poll
	wall    time.Duration
}

// batchVariant is one way for a coordinator to wait for the batch. wait
// blocks until it believes the batch is done; count is called once per
// finished job.
type batchVariant struct {
	name  string
	setup func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error
	wait  func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error
	done  func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error
}

// batchRun is the state of one variant's run.
type batchRun struct {
	jobs    int
	counter string // the done counter: INCR per job, which the check reads
	latch   string // the latch's name
	reads   atomic.Int64
}

func batchVariants() []batchVariant {
	return []batchVariant{
		{
			name: fmt.Sprintf("poll a counter every %v", batchPoll),
			wait: func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error {
				for {
					run.reads.Add(1)
					n, err := rdb.Get(ctx, run.counter).Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					if n >= run.jobs {
						return nil
					}
					if err := pause(ctx, batchPoll); err != nil {
						return err
					}
				}
			},
		},
		{
			name: "latch",
			setup: func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error {
				ok, err := latch.New(rdb, run.latch).TrySetCount(ctx, int64(run.jobs))
				if err == nil && !ok {
					err = fmt.Errorf("latch %q is already set", run.latch)
				}
				return err
			},
			wait: func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error {
				return latch.New(rdb, run.latch).Wait(ctx)
			},
			done: func(ctx context.Context, rdb redis.UniversalClient, run *batchRun) error {
				return latch.New(rdb, run.latch).CountDown(ctx)
			},
		},
	}
}

func demoBatch(ctx context.Context, w io.Writer, cfg *batchConfig) error {
	fmt.Fprintf(w, "\n== batch ==\nA batch of %d jobs runs on %d service instances; a coordinator in each instance\n"+
		"must go on only once every job is done. A job takes %v on average.\n\n",
		cfg.jobs, len(cfg.instances), cfg.work)
	tab := newTable("variant", "went on early", "late by", "counter reads", "wall time")
	var failed []string
	for i, v := range batchVariants() {
		row, err := runBatch(ctx, cfg, v, i)
		if err != nil {
			return err
		}
		reads := "-"
		if row.reads > 0 {
			reads = fmt.Sprint(row.reads)
		}
		tab.add(row.variant, fmt.Sprint(row.early), fmtDuration(row.lag), reads, fmtDuration(row.wall))
		if row.early > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d coordinator(s) went on before the batch was done", row.variant, row.early))
		}
	}
	tab.write(w)
	fmt.Fprintln(w)
	if err := failures(w, "batch", failed); err != nil {
		return err
	}
	fmt.Fprintf(w, "- late by: from the last job done until the last coordinator went on\n")
	fmt.Fprintf(w, "- polling is late by up to its interval, and every coordinator reads the counter over and over\n")
	fmt.Fprintf(w, "- the latch wakes every coordinator of every instance with the one message of its step to zero\n")
	fmt.Fprintf(w, "- no coordinator went on before the last job was done: checked\n")
	return nil
}

// runBatch runs one variant: a coordinator per instance waits while the
// jobs, spread over the instances, run and report.
func runBatch(ctx context.Context, cfg *batchConfig, v batchVariant, idx int) (batchRow, error) {
	run := &batchRun{
		jobs:    cfg.jobs,
		counter: fmt.Sprintf("%sbatch:%d:done", cfg.prefix, idx),
		latch:   fmt.Sprintf("%sbatch:%d", cfg.prefix, idx),
	}
	row := batchRow{variant: v.name}
	fail := func(err error) (batchRow, error) { return row, fmt.Errorf("%s: %w", v.name, err) }
	if v.setup != nil {
		if err := v.setup(ctx, cfg.instances[0], run); err != nil {
			return fail(err)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		mu      sync.Mutex // guards lastJob and wentOn
		lastJob time.Time
		wentOn  []time.Time
		early   atomic.Int64
		wg      sync.WaitGroup
	)
	for _, rdb := range cfg.instances {
		wg.Go(func() {
			if err := v.wait(ctx, rdb, run); err != nil {
				cancel(err)
				return
			}
			now := time.Now()
			if n, err := rdb.Get(ctx, run.counter).Int(); err != nil || n < run.jobs {
				early.Add(1)
			}
			mu.Lock()
			wentOn = append(wentOn, now)
			mu.Unlock()
		})
	}
	began := time.Now()
	_, err := crowd(ctx, cfg.instances, cfg.jobs, func(ctx context.Context, rdb redis.UniversalClient, i int) error {
		// Jobs take from half to one and a half times the average.
		if err := pause(ctx, cfg.work/2+cfg.work*time.Duration(i%5)/4); err != nil {
			return err
		}
		if err := rdb.Incr(ctx, run.counter).Err(); err != nil {
			return err
		}
		mu.Lock()
		lastJob = time.Now()
		mu.Unlock()
		if v.done != nil {
			return v.done(ctx, rdb, run)
		}
		return nil
	})
	if err != nil {
		cancel(err)
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fail(err)
	}
	for _, at := range wentOn {
		row.lag = max(row.lag, at.Sub(lastJob))
		row.wall = max(row.wall, at.Sub(began))
	}
	row.early, row.reads = int(early.Load()), run.reads.Load()
	return row, nil
}
