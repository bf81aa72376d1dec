package faulttest_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
)

// The semaphores seen as mutexes: one permit, set by whoever creates a
// handle if nobody has set it yet.

// setOnePermit sets the semaphore's permits to one unless they are set.
// Errors are ignored: a Lock that cannot work fails in its own right.
func setOnePermit(set func(ctx context.Context, n int64) (bool, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	_, _ = set(ctx, 1)
}

// leasedLocker holds the one permit of a Leased semaphore, with lease 0.
type leasedLocker struct {
	l *semaphore.Leased
	// retry is how long a waiting Lock waits before it sets the permits
	// again, should Redis have lost them (a restart without persistence),
	// and goes on waiting.
	retry time.Duration

	mu sync.Mutex
	id string // the permit held; "" when none
}

func newLeasedLocker(rdb redis.UniversalClient, name string, lease time.Duration) *leasedLocker {
	x := &leasedLocker{l: semaphore.NewLeased(rdb, name, semaphore.WithWatchdogTimeout(lease)), retry: lease}
	setOnePermit(x.l.TrySetPermits)
	return x
}

func (x *leasedLocker) Lock(ctx context.Context) error {
	for {
		actx, cancel := context.WithTimeout(ctx, x.retry)
		id, err := x.l.Acquire(actx, 0)
		cancel()
		if err == nil {
			x.mu.Lock()
			x.id = id
			x.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		_, _ = x.l.TrySetPermits(ctx, 1)
	}
}

func (x *leasedLocker) TryLock(ctx context.Context) (bool, error) {
	id, ok, err := x.l.TryAcquire(ctx, 0)
	if ok {
		x.mu.Lock()
		x.id = id
		x.mu.Unlock()
	}
	return ok, err
}

// Unlock releases the permit held. After an error other than not held the
// handle keeps its id, so that a retried Unlock releases the same permit.
func (x *leasedLocker) Unlock(ctx context.Context) error {
	x.mu.Lock()
	id := x.id
	x.mu.Unlock()
	if id == "" {
		return semaphore.ErrNotHeld
	}
	err := x.l.Release(ctx, id)
	if err == nil || errors.Is(err, semaphore.ErrNotHeld) {
		x.mu.Lock()
		if x.id == id {
			x.id = ""
		}
		x.mu.Unlock()
	}
	return err
}

func (x *leasedLocker) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.l.Done(x.id) // closed for "": nothing held
}

// countingLocker holds the one permit of a counting Semaphore. Its permits
// are not owned, so the handle remembers whether it holds one: Unlock
// without a hold is not held, and changes nothing. A hold is never lost.
type countingLocker struct {
	s *semaphore.Semaphore

	mu   sync.Mutex
	done chan struct{} // open while the handle holds the permit
}

func newCountingLocker(rdb redis.UniversalClient, name string, lease time.Duration) *countingLocker {
	// The poll interval stands in for the lease that bounds a lock's
	// sleeps.
	x := &countingLocker{s: semaphore.New(rdb, name, semaphore.WithPollInterval(lease)), done: closedChan()}
	setOnePermit(x.s.TrySetPermits)
	return x
}

func (x *countingLocker) Lock(ctx context.Context) error {
	if err := x.s.Acquire(ctx, 1); err != nil {
		return err
	}
	x.mu.Lock()
	x.done = make(chan struct{})
	x.mu.Unlock()
	return nil
}

func (x *countingLocker) TryLock(ctx context.Context) (bool, error) {
	ok, err := x.s.TryAcquire(ctx, 1)
	if ok {
		x.mu.Lock()
		x.done = make(chan struct{})
		x.mu.Unlock()
	}
	return ok, err
}

func (x *countingLocker) Unlock(ctx context.Context) error {
	x.mu.Lock()
	done := x.done
	x.mu.Unlock()
	if isClosed(done) {
		return semaphore.ErrNotHeld
	}
	if err := x.s.Release(ctx, 1); err != nil {
		return err
	}
	close(done)
	return nil
}

func (x *countingLocker) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.done
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
