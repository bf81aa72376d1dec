package hold

import "time"

// run is one hold in Redis handed between goroutines of the handle (local
// handoffs, see Lock.handOver): how many passes it has seen, and when it
// began. It bounds how long the waiters in Redis wait for it (see
// maxPasses).
type run struct {
	passes int
	since  time.Time
}

// passOn reports whether hold h's run may pass the lock on once more
// within the process (see maxPasses), and counts the pass if so. The
// caller holds mu.
func (t *Tracker) passOn(h *hold) bool {
	if !h.run.open() {
		return false
	}
	h.run.passes++
	return true
}

// open reports whether the run may pass the lock on once more: at most
// maxPasses times in a row and, after the first, only within maxPassTime
// of its start.
func (r run) open() bool {
	return r.passes < maxPasses && (r.passes == 0 || time.Since(r.since) < maxPassTime)
}
