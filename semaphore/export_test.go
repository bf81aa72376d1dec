package semaphore

import "sync"

// HoldLost holds the first Lost hook of l's permits, as a goroutine
// descheduled there would, until let is called: the permit's hold has
// ended, and its Tracker is still in the handle's map. reached is closed
// once the hook is held.
func HoldLost(l *Leased) (reached <-chan struct{}, let func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	l.lostAt = func() {
		once.Do(func() {
			close(in)
			<-out
		})
	}
	return in, sync.OnceFunc(func() { close(out) })
}
