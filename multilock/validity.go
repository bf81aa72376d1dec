package multilock

import (
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// assumedWatchdogTimeout is the watchdog timeout a quorum assumes for a
// member of another library that does not say how long its holds last
// (see Leaser): the default of redisync's locks.
const assumedWatchdogTimeout = 30 * time.Second

// DefaultWatchdogTimeout is the watchdog timeout a quorum assumes for a
// member that does not say; it cannot be set.
//
// Deprecated: a tuning constant, unexported from the next release.
const DefaultWatchdogTimeout = assumedWatchdogTimeout

// A quorum round counts only if its majority was reached within the
// group's budget, the least of its members' budgets:
//
//   - a member with a fixed lease L keeps a hold that the servers expire
//     L after they granted it; the round must leave more than half of L,
//     after a drift margin for the clocks of the servers and the client
//     running at different rates: majority < L/2 - drift(L);
//   - a member kept alive by a watchdog of timeout T is renewed every
//     T/3; the majority must be reached before the first renewal is due,
//     so that no member granted early in the round can have expired
//     before the group starts keeping it: majority < T/3.
//
// The budget also bounds each member's attempt in a round: a server that
// has not answered by then could not have counted. Such an attempt gives
// back what it sent in the background, within hold.CleanupTimeout, and
// the member's next attempt waits for that give-back first, so that
// nothing it took is left behind; with a fixed lease, the round counts
// only if the shortest lease still has time left when it ends:
// total + drift(L) < L.

// drift is the margin for clock rates: 1% of the lease, plus 2ms for
// timer granularity on the servers and the client.
func drift(lease time.Duration) time.Duration { return lease/100 + 2*time.Millisecond }

// budget returns the time a quorum round over members may take to reach
// a majority, and the shortest fixed lease among them (0: none).
func budget(members []Locker, watch []*hold.Watcher) (b, fixed time.Duration) {
	for i, m := range members {
		d, isFixed := lease(m, watch[i])
		mb := d / 3
		if isFixed {
			mb = d/2 - drift(d)
			if fixed == 0 || d < fixed {
				fixed = d
			}
		}
		if i == 0 || mb < b {
			b = mb
		}
	}
	// A lease too short for any round leaves a budget that no round meets:
	// such a quorum never holds, which its Lock reports at ctx's end.
	return max(b, 0), fixed
}

// lease returns how long member m's holds last and whether that is fixed.
func lease(m Locker, w *hold.Watcher) (time.Duration, bool) {
	if l, ok := m.(Leaser); ok {
		return l.Lease()
	}
	if w != nil {
		k := w.Keeping()
		if k.LeaseTime > 0 {
			return k.LeaseTime, true
		}
		return k.WatchdogTimeout, false
	}
	return assumedWatchdogTimeout, false
}
