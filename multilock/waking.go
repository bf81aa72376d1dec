package multilock

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// retryDelay is the mean delay after which a waiting quorum tries again
// when no release woke it sooner: each sleep lasts a random time between
// half and one and a half times it. Members that announce their releases
// (rlock, rwlock) wake it sooner; for other Lockers, and for a member
// whose server did not confirm the subscription in time, the delay is
// what bounds the wait. The randomness keeps groups that missed together
// from trying again in step.
const retryDelay = 100 * time.Millisecond

// RetryDelay is how long a group waits between rounds when no release
// woke it sooner; it cannot be set.
//
// Deprecated: a tuning constant, unexported from the next release.
const RetryDelay = retryDelay

// wakeJitter is the most a quorum waits, after a release woke it, before
// its next round: groups of several processes woken by one release do not
// all split the members between them again.
const wakeJitter = 10 * time.Millisecond

// waking is what a waiting quorum sleeps on: its members' release
// announcements, a randomized timer and ctx.
type waking struct {
	watches []*hold.Watch // per member; nil where it cannot be watched
	timer   *time.Timer
}

// subscribe watches every member that announces its releases, in
// parallel; a subscription not confirmed within retryDelay (its server
// is down or slow) is given up: the timer stands in for it.
func (g *Group) subscribe(ctx context.Context) *waking {
	sctx, cancel := context.WithTimeout(ctx, retryDelay)
	defer cancel()
	k := &waking{watches: make([]*hold.Watch, len(g.members)), timer: time.NewTimer(retryDelay)}
	k.timer.Stop() // armed by each sleep
	var wg sync.WaitGroup
	for i, w := range g.watch {
		if w != nil && w.Announced() {
			wg.Go(func() { k.watches[i], _ = w.Watch(sctx) })
		}
	}
	wg.Wait()
	return k
}

// sleep waits until the release of a member in refused (those the last
// round found held by someone else), the randomized retry delay, or ctx's
// end, which it returns. After a release it waits a random wakeJitter
// more. The members the round took and gave back are not waited on: that
// release was the group's own, and would wake it at once, round after
// round, while the members it lacks stay held.
func (k *waking) sleep(ctx context.Context, refused []int) error {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(k.timer.C)},
	}
	for _, i := range refused {
		if w := k.watches[i]; w != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.C())})
		}
	}
	k.timer.Reset(retryDelay/2 + rand.N(retryDelay))
	i, _, _ := reflect.Select(cases)
	switch {
	case i == 0:
		k.stopTimer()
		return ctx.Err()
	case i == 1:
		return nil
	}
	k.stopTimer()
	k.timer.Reset(rand.N(wakeJitter) + 1)
	select {
	case <-ctx.Done():
		k.stopTimer()
		return ctx.Err()
	case <-k.timer.C:
		return nil
	}
}

// stopTimer stops the timer; since Go 1.23 a stopped timer's channel
// holds no stale value, so it can be Reset at once.
func (k *waking) stopTimer() { k.timer.Stop() }

// close ends every watch. It is a no-op on a nil waking.
func (k *waking) close() {
	if k == nil {
		return
	}
	k.timer.Stop()
	for _, w := range k.watches {
		if w != nil {
			w.Close()
		}
	}
}
