package hold

import (
	"context"
	"sync"
	"time"
)

// SlowForget makes the first forgetting of the holds of x's handle (x is
// a lock handle, such as an *rlock.Mutex) take d longer, as a goroutine
// descheduled there would, and closes forgot once it is done: it widens
// the window between a hold's end and its goroutines forgetting their
// holds, which must be none.
func SlowForget(x any, d time.Duration, forgot chan<- struct{}) {
	l := WatcherOf(x).h.l
	var once sync.Once
	l.t.forget = func(h *hold) {
		slow := false
		once.Do(func() { slow = true })
		if slow {
			time.Sleep(d) // fault injection: the window, not a wait for anything
		}
		l.owners.reset(h)
		if slow {
			close(forgot)
		}
	}
}

// Current returns the Tracker's current hold, for ReleaseOf.
func (t *Tracker) Current() any { return t.current() }

// ReleaseOf releases a level of mode m of h, a hold Current returned.
func (t *Tracker) ReleaseOf(ctx context.Context, h any, m Mode) error {
	return t.releaseHold(ctx, h.(*hold), m, nil)
}

// Ends returns how many cancel functions of Do the current hold of x's
// handle keeps (x is a lock handle, such as an *rwlock.RWMutex): 0 when
// it holds nothing.
func Ends(x any) int {
	t := WatcherOf(x).h.l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return 0
	}
	return len(t.cur.ends)
}
