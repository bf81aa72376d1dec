package hold

import (
	"fmt"

	"github.com/redisync/redisync/internal/errs"
)

// CheckRedis checks the one-record plan's I3 against what a fake Redis
// holds: every level held in Redis under an id of the handle (held) is
// the current hold's, held by a holder (or its release in flight), under
// the tag Redis has for a read level, or it is owed by mode, id and tag;
// and nothing is owed twice. It returns "" when a give-back runs in the
// background (not settled).
func (t *Tracker) CheckRedis(held map[string][2]bool, tags map[string]uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.giving > 0 {
		return nil
	}
	seen := map[owed]int{}
	for _, o := range t.owed {
		seen[o]++
		if seen[o] > 1 {
			return fmt.Errorf("owed twice: %+v (owed %+v)", o, t.owed)
		}
	}
	for id, lv := range held {
		for m, in := range lv {
			if !in {
				continue
			}
			var tag uint64
			if Mode(m) == Shared {
				tag = tags[id]
			}
			h := t.cur
			if h != nil && h.id == id && h.in(Mode(m)) {
				if Mode(m) == Shared && h.tag != tag {
					return fmt.Errorf("hold %s holds its read level under tag %d; Redis has tag %d", id, h.tag, tag)
				}
				continue
			}
			if seen[owed{Mode(m), id, tag}] > 0 {
				continue
			}
			return fmt.Errorf("Redis has level %d of %s (tag %d), which nobody holds or owes (current %v, owed %+v)", m, id, tag, h != nil, t.owed)
		}
	}
	return nil
}

// LoseNow ends the current hold as the watchdog does when it gives a hold
// up as lost (its renewals failed, Redis may still have it).
func (t *Tracker) LoseNow() {
	if h := t.current(); h != nil {
		t.end(h, fmt.Errorf("%w: renewals failed", errs.ErrLost))
	}
}

// LoseIfReleased ends hold h (from Current) as the watchdog does when a
// renewal finds the lock gone, if h is still current but has no level
// left and no release in flight: the instant after a release recorded
// its outcome and before it ended h. It reports whether it found that.
func (t *Tracker) LoseIfReleased(h any) bool {
	hh := h.(*hold)
	t.mu.Lock()
	ok := t.cur == hh && hh.going == 0 && hh.empty()
	t.mu.Unlock()
	if ok {
		t.end(hh, fmt.Errorf("%w: a renewal found the lock gone", errs.ErrLost))
	}
	return ok
}

// HoldMu takes Tracker.mu and returns what gives it back: a test holds it
// to order the handle's critical sections (a Go mutex hands itself to a
// waiter that has waited over a millisecond).
func (t *Tracker) HoldMu() func() {
	t.mu.Lock()
	return t.mu.Unlock
}
