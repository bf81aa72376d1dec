package hold

import (
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
	l.t.onLoss = func() {
		slow := false
		once.Do(func() { slow = true })
		if slow {
			time.Sleep(d) // fault injection: the window, not a wait for anything
		}
		l.owners.reset()
		if slow {
			close(forgot)
		}
	}
}
