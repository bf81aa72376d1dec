package semaphore

import (
	"time"

	"github.com/redisync/redisync/internal/hold"
)

// The permits of a Leased that the watchdog keeps alive (lease 0): each is
// a hold of its own in the engine (hold.Tracker), with its own Done.

// keep hands the permit id, renewed at sent, to the watchdog, or records
// the renewal if the watchdog keeps it already.
func (l *Leased) keep(id string, sent time.Time) {
	l.mu.Lock()
	t := l.kept[id]
	if t == nil {
		t = l.tracker(id)
		l.kept[id] = t
	}
	l.mu.Unlock()
	t.Adopt(sent)
}

// forget stops tracking the permit id and returns its tracker, nil if
// none; the caller releases or drops its hold.
func (l *Leased) forget(id string) *hold.Tracker {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.kept[id]
	delete(l.kept, id)
	return t
}

// Done returns a channel that is closed when this handle's watchdog stops
// keeping the permit id alive: after Release of id through this handle
// (successful or not), a Renew of it with a positive lease, or when the
// watchdog gives it up because a renewal found it gone or renewals kept
// failing until its lease ran out (then WithOnLost's function runs). For
// an id the watchdog does not keep alive for this handle (acquired with a
// positive lease, or through another handle) it returns a closed channel.
func (l *Leased) Done(id string) <-chan struct{} {
	l.mu.Lock()
	t := l.kept[id]
	l.mu.Unlock()
	if t == nil {
		return closed
	}
	return t.Done()
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
