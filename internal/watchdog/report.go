package watchdog

import (
	"errors"
	"time"

	"github.com/redisync/redisync/observe"
)

// report tells the client's Observer (package observe), if any, how a
// batch of renewals that took d went.
func (w *Watchdog) report(rs []result, d time.Duration) {
	o := observe.Of(w.rdb)
	if o == nil {
		return
	}
	r := observe.Renewal{Duration: d}
	w.mu.Lock()
	for _, res := range rs {
		switch {
		case errors.Is(res.err, ErrPending):
			// Not due yet: nothing was sent.
		case res.err != nil:
			r.Failed++
		case res.held:
			r.OK++
		case !res.h.removed:
			r.Lost++
		}
		// A hold removed meanwhile and found gone was released while its
		// renewal ran: not a loss, and nothing was renewed.
	}
	w.mu.Unlock()
	o.Renewed(r)
}
