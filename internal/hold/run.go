package hold

import "time"

// run is a chain of holds of one process, each passed the lock by the
// one before within the process (a local handoff): how many
// passes it has seen, and when its first hold began. It bounds how long
// the processes waiting in Redis wait for it (see maxPasses).
type run struct {
	passes int
	since  time.Time
}

// passOn reports whether hold h's run may pass the lock on once more
// within the process (see maxPasses), and counts the pass if so.
func (t *Tracker) passOn(h *hold) bool {
	t.runMu.Lock()
	defer t.runMu.Unlock()
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
