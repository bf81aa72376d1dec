package hold

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hub"
	"github.com/redisync/redisync/internal/perclient"
)

// What package multilock needs of a member it does not hold: the lease
// the member's holds have, and a way to sleep until the member may have
// been released without taking it or joining its line.
//
// A lock package offers it by embedding a Handle in its handle type under
// an unexported alias (type engine = hold.Handle). Handle has no exported
// field or method, so nothing of it shows in the package's documentation
// or API, and only this package can read it: its one method has an
// unexported name, which an interface here can still ask for.

// Handle is embedded in a lock's handle type to let package multilock find
// the handle's engine (see Watcher).
type Handle struct {
	l       *Lock
	channel string // see Handle
}

// Handle returns what l's handle type embeds. channel is where every
// release that frees the lock is published to whoever listens (rlock's
// shared channel, rwlock's writers' channel); "" for a lock that tells
// only the head of its line, on a channel of the head's own (a fair
// lock).
func (l *Lock) Handle(channel string) Handle { return Handle{l: l, channel: channel} }

func (h Handle) handle() Handle { return h }

type embedsHandle interface{ handle() Handle }

// Watcher is the engine of a lock handle as a group of locks sees it.
type Watcher struct{ h Handle }

// WatcherOf returns the Watcher of x if x is a redisync lock handle that
// embeds a Handle, else nil.
func WatcherOf(x any) *Watcher {
	e, ok := x.(embedsHandle)
	if !ok {
		return nil
	}
	if h := e.handle(); h.l != nil {
		return &Watcher{h: h}
	}
	return nil
}

// Keeping returns how the lock keeps its holds: a fixed lease, or the
// watchdog and its timeout.
func (w *Watcher) Keeping() Keeping { return w.h.l.k.Keeping }

// Client returns the Redis client of the lock.
func (w *Watcher) Client() redis.UniversalClient { return w.h.l.k.RDB }

// Announced reports whether Watch can wake on the lock's releases.
func (w *Watcher) Announced() bool { return w.h.channel != "" }

// Watch subscribes to the channel on which the lock announces a release
// that frees it (see Handle), and returns once Redis has confirmed it, so a
// release after Watch returns is not missed. It takes nothing: a wake-up
// says only that the lock may be free. It returns nil and no error when
// the lock does not announce its releases to all (see Handle).
//
// A lock may announce only the releases of holds that a watcher asked
// for (rlock: nobody listens to most releases, and a PUBLISH costs Redis
// a command on each): until the Watch is closed, every attempt of the
// handle that finds the lock held by another asks for it (Asking.Watched).
// The group attempts after Watch returns, so it hears the release of
// every hold that refused it then.
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
	l   *Lock // counts the watch while it is open
}

// C returns the channel on which a release wakes the watch. Wake-ups
// coalesce.
func (w *Watch) C() <-chan struct{} { return w.sub.C() }

// Close ends the watch. A wake-up it received and did not take from C is
// passed to another waiter of the process; one it took was acted on: the
// group tried the lock, and a group that gave the lock back announced
// that release itself.
func (w *Watch) Close() {
	w.l.watched.Add(-1)
	w.sub.Close()
	w.c.Detach()
}
