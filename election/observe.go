package election

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/perclient"
)

// Observe returns a channel on which the election's leader is sent: the
// current one at once (when somebody leads), then every change of leader
// or of its value, in order, until ctx ends; the channel is then closed.
// A change is published by the script that makes it (a campaign that
// wins, a resignation, Proclaim, a forced resignation), and the observer
// also reads the leader at least every observeInterval, so a lost
// notification, or a leader whose lease ran out with nobody to take over,
// costs at most that long. An observer sees every leader that led for
// longer than that, and never a term lower than one it has seen: within
// a term only the value changes. Times without a leader are not sent.
// The change is seen in Redis: an observer may hear of a new leader before
// that leader's own Campaign has returned, and the leader's handle acts
// as leader (Proclaim, Resign, Term) only from then on.
//
// The channel is unbuffered, and the observer sends the latest leader it
// read: one that does not keep up misses intermediate values, never the
// order. Observe runs one goroutine until ctx ends; all observers of a
// Redis client share its one pub/sub connection.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader)
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- Leader) {
	defer close(ch)
	c := perclient.Attach(e.b.RDB)
	defer c.Detach()
	var sub *hub.Subscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	timer := time.NewTimer(0) // the first read at once
	defer timer.Stop()
	var last Leader
	for {
		var wake <-chan struct{}
		if sub != nil {
			wake = sub.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake:
		}
		if sub == nil {
			// Subscribed before the read, so that a change after the read
			// wakes the observer; until then, it reads on its timer.
			sub, _ = c.Hub.Subscribe(ctx, e.keys.Changes)
		}
		l, err := e.read(ctx)
		timer.Reset(observeInterval)
		if err != nil || !newer(l, last) {
			continue
		}
		last = l
		select {
		case ch <- l:
		case <-ctx.Done():
			return
		}
	}
}

// newer reports whether l is a change from last: a later term, or a new
// value in the same term.
func newer(l, last Leader) bool {
	return l.Term > last.Term || l.Term == last.Term && l.Value != last.Value
}
