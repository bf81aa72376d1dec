package hold

import (
	"context"
	"fmt"

	"github.com/redisync/redisync/internal/errs"
)

// Current returns the Tracker's current hold, for ReleaseOf.
func (t *Tracker) Current() any { return t.current() }

// ReleaseOf releases a level of mode m of h, a hold Current returned.
func (t *Tracker) ReleaseOf(ctx context.Context, h any, m Mode) error {
	return t.releaseHold(ctx, h.(*hold), nil, m)
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

// RLockAcrossEnd takes a plain read of x's handle (x is a lock handle,
// such as an *rwlock.RWMutex) in one attempt, as TryRLock does, except
// that the hold the read would join ends (lost) once the read is through
// the local line: the watchdog's loss, or a ForceUnlock, in that instant.
// A join is decided and recorded in the critical section where the hold
// is current (Tracker.join), so this is the last instant the end can come
// in before it.
func RLockAcrossEnd(ctx context.Context, x any) (bool, error) {
	l := WatcherOf(x).h.l
	if !l.t.gate.TryAcquire(1) {
		return false, nil
	}
	if h := l.t.current(); h != nil {
		l.t.end(h, errs.ErrLost)
	}
	in := &intent{m: Shared, plain: true}
	ok, err := l.try(ctx, Shared, in)
	if !ok || err != nil || in.h == nil {
		l.t.gate.Release(1)
		return false, err
	}
	return true, nil
}

// CheckRecord checks, between calls, that the local line's units follow
// the current hold's holders (the one-record plan's I5): an exclusive
// record has all of them but those its downgraded reads borrow, every
// read one, and nothing else holds any.
func (l *Lock) CheckRecord() error {
	l.t.mu.Lock()
	h := l.t.cur
	var want int64
	if h != nil {
		if h.x != nil {
			want = l.t.units - h.x.reads
		}
		want += h.plainReads + int64(len(h.rdos))
	}
	l.t.mu.Unlock()
	free := l.t.units - want
	if !l.t.gate.TryAcquire(free) {
		return fmt.Errorf("the local line has fewer than %d units free; its holders hold %d", free, want)
	}
	l.t.gate.Release(free)
	if want > 0 && l.t.gate.TryAcquire(free+1) {
		l.t.gate.Release(free + 1)
		return fmt.Errorf("the local line has more than %d units free; its holders hold %d", free, want)
	}
	return nil
}

// GateFree reports whether a call for mode m would pass the handle's local
// line at once, for a test that must not wait there.
func (l *Lock) GateFree(m Mode) bool {
	n := int64(1)
	if m == Exclusive {
		n = l.t.units
	}
	if !l.t.gate.TryAcquire(n) {
		return false
	}
	l.t.gate.Release(n)
	return true
}
