package hold

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/perclient"
)

// Handle is embedded in a lock's handle type, under an unexported alias
// (type engine = hold.Handle), to let package multilock find the handle's
// engine (Watcher): the lease of a member it does not hold, and a way to
// sleep until it may be free. With no exported field or method, nothing
// of it shows in the lock package's API.
type Handle struct {
	l       *Lock
	channel string
}

// Handle returns what l's handle type embeds. channel is where every
// release that frees the lock is published (rlock's, rwlock's writers'); ""
// for a lock that tells only the head of its line.
func (l *Lock) Handle(channel string) Handle { return Handle{l: l, channel: channel} }

func (h Handle) handle() Handle { return h }

type embedsHandle interface{ handle() Handle }

// Watcher is the engine of a lock handle as a group of locks sees it.
type Watcher struct{ h Handle }

// WatcherOf returns the Watcher of x if x embeds a Handle, else nil.
func WatcherOf(x any) *Watcher {
	if e, ok := x.(embedsHandle); ok && e.handle().l != nil {
		return &Watcher{h: e.handle()}
	}
	return nil
}

// Keeping returns how the lock keeps its holds.
func (w *Watcher) Keeping() Keeping { return w.h.l.k.Keeping }

// Client returns the Redis client of the lock.
func (w *Watcher) Client() redis.UniversalClient { return w.h.l.k.RDB }

// Announced reports whether Watch can wake on the lock's releases.
func (w *Watcher) Announced() bool { return w.h.channel != "" }

// Watch subscribes to the lock's release announcements and returns once
// Redis has confirmed it; nil and no error when the lock announces none. A
// wake-up says only that the lock may be free. Until the Watch is closed,
// refused attempts of the handle ask the holder to announce its release
// (Asking.Watched), so a group attempting after Watch returns hears every
// release of a hold that refused it; rlock announces only those.
func (w *Watcher) Watch(ctx context.Context) (*Watch, error) {
	if w.h.channel == "" {
		return nil, nil
	}
	c := perclient.Attach(w.h.l.k.RDB)
	sub, err := c.Hub.Subscribe(ctx, w.h.channel)
	if err != nil {
		c.Detach()
		return nil, err
	}
	w.h.l.watched.Add(1)
	return &Watch{c: c, sub: sub, l: w.h.l}, nil
}

// Watch is one confirmed subscription to a lock's release announcements.
type Watch struct {
	c   *perclient.Client
	sub *hub.Subscription
	l   *Lock
}

// C returns the channel on which a release wakes the watch. Wake-ups
// coalesce.
func (w *Watch) C() <-chan struct{} { return w.sub.C() }

// Close ends the watch. A wake-up it did not take from C is passed to
// another waiter of the process.
func (w *Watch) Close() {
	w.l.watched.Add(-1)
	w.sub.Close()
	w.c.Detach()
}
