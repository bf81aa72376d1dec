package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/wait"
)

// ErrNotHeld is returned by Unlock when the group is not held. It is the
// same value in every redisync package.
var ErrNotHeld = errs.ErrNotHeld

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// Locker is what a Group is made of. *rlock.Mutex, *fairlock.Mutex and
// *rwlock.RWMutex (its write side) are Lockers.
type Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Name() string
}

// Leaser is an optional interface of a Locker of another library: it says
// how long the Locker's holds last, which a quorum needs to judge whether
// a majority was reached in time (see Validity in the package doc).
// redisync's own locks need not implement it.
type Leaser interface {
	// Lease returns the lease of the Locker's holds, and whether it is
	// fixed (the hold ends when it runs out) or renewed while the hold
	// lasts (a watchdog, whose timeout d is).
	Lease() (d time.Duration, fixed bool)
}

// Group is several locks held as one: all of them (New) or a majority
// (NewQuorum). A Group is shared by goroutines the way its members are:
// while one holds it, another's Lock waits. It is safe for concurrent use.
type Group struct {
	members []Locker        // all-of: in canonical order (by name)
	watch   []*hold.Watcher // quorum, per member: its engine, if it is a redisync lock
	need    int             // members a hold needs: all, or a majority
	quorum  bool
	label   string        // the members' names, for errors: ["a" "b"]
	probe   wait.Probe    // what Lock and TryLock report (see labelled)
	budget  time.Duration // quorum: the time a round may take to a majority (see validity.go)
	fixed   time.Duration // quorum: the shortest fixed lease of a member; 0: none

	mu     sync.Mutex // protects levels and cur
	levels [][]int    // per level held, the members it took; innermost last
	cur    *holding   // the current hold, while levels is not empty
}

// New returns a group that holds when every one of locks is held
// (Redisson's MultiLock). It takes them one by one in the order of their
// names, the same in every group of every process, so that groups over
// overlapping locks never deadlock. It does no I/O. It panics when locks
// is empty, a lock is nil or given twice, or two locks have the same
// name: the same name on several servers is a quorum (NewQuorum).
func New(locks ...Locker) *Group {
	g := newGroup("New", locks)
	names := make(map[string]bool, len(locks))
	for _, l := range locks {
		if names[l.Name()] {
			panic(fmt.Sprintf("multilock: New with two locks named %q: for the same lock on several servers use NewQuorum", l.Name()))
		}
		names[l.Name()] = true
	}
	slices.SortFunc(g.members, func(a, b Locker) int { return cmp.Compare(a.Name(), b.Name()) })
	g.need = len(g.members)
	return g.labelled()
}

// NewQuorum returns a group that holds when a majority of locks is held
// (Redlock): normally one handle on the same name on each of N
// independent Redis servers. It tries every lock at once and keeps what
// it got only when a majority was reached well within the lease. It does
// no I/O. It panics when locks is empty, or a lock is nil or given twice.
// A quorum of one is allowed: it is that lock.
func NewQuorum(locks ...Locker) *Group {
	g := newGroup("NewQuorum", locks)
	g.quorum = true
	g.need = len(locks)/2 + 1
	g.watch = watchers(g.members)
	g.budget, g.fixed = budget(g.members, g.watch)
	return g.labelled()
}

func newGroup(fn string, locks []Locker) *Group {
	if len(locks) == 0 {
		panic("multilock: " + fn + " with no locks")
	}
	seen := make(map[Locker]bool, len(locks))
	for i, l := range locks {
		if isNil(l) {
			panic(fmt.Sprintf("multilock: %s with a nil lock (argument %d)", fn, i))
		}
		if reflect.TypeOf(l).Comparable() {
			if seen[l] {
				panic(fmt.Sprintf("multilock: %s with the same lock %q twice", fn, l.Name()))
			}
			seen[l] = true
		}
	}
	return &Group{members: slices.Clone(locks)}
}

// isNil reports whether l is nil or a nil pointer in a Locker.
func isNil(l Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func watchers(ls []Locker) []*hold.Watcher {
	w := make([]*hold.Watcher, len(ls))
	for i, l := range ls {
		w[i] = hold.WatcherOf(l)
	}
	return w
}

// labelled sets the group's label, its members' names in the order it
// takes them: ["a" "b"].
func (g *Group) labelled() *Group {
	names := make([]string, len(g.members))
	for i, l := range g.members {
		names[i] = l.Name()
	}
	g.label = fmt.Sprintf("%q", names)
	// A group reports its acquisitions, as primitive "multilock", to the
	// Observer of its first redisync member's client (package observe):
	// a group may span several clients, and reporting on each would count
	// it several times. Its members report as themselves besides.
	for _, l := range g.members {
		if w := hold.WatcherOf(l); w != nil {
			g.probe = wait.NewProbe(w.Client(), "multilock", g.label)
			break
		}
	}
	return g
}

// Lock locks every member of g (New), or a majority of them (NewQuorum),
// waiting until it can or ctx is done. With a ctx that carries the holds
// of members (see rlock's Do), each of those re-enters as it would on its
// own. On failure it returns an error wrapping ctx.Err() or the members'
// errors, and leaves nothing held.
func (g *Group) Lock(ctx context.Context) error {
	rctx, r := g.probe.Begin(ctx, true)
	var err error
	if g.quorum {
		err = g.lockQuorum(rctx)
	} else {
		_, err = g.lockAll(rctx, false)
	}
	r.End(ctx, err == nil, err)
	return g.wrap("lock", err)
}

// TryLock makes one attempt to lock g: one attempt on each member. It
// reports false and no error when a member is held by someone else (New)
// or when that denied a majority (NewQuorum); a quorum that missed it
// because members failed returns their errors joined. Either way nothing
// stays held.
func (g *Group) TryLock(ctx context.Context) (bool, error) {
	rctx, r := g.probe.Begin(ctx, false)
	var ok bool
	var err error
	if g.quorum {
		ok, err = g.tryQuorum(rctx)
	} else {
		ok, err = g.lockAll(rctx, true)
	}
	r.Attempt(ctx, ok, err)
	r.End(ctx, ok, err)
	return ok, g.wrap("lock", err)
}

// Unlock releases the members the innermost level of g's hold took, in
// parallel, and returns their errors joined. When that was the last level
// Done closes first: the group stops holding whether or not every release
// succeeds (a member whose release failed frees itself when its lease runs
// out). Unlock of a group that is not held returns an error wrapping
// ErrNotHeld and changes nothing. Like a member's Unlock it runs even when
// ctx is done, bounded by a timeout of its own.
func (g *Group) Unlock(ctx context.Context) error {
	g.mu.Lock()
	if len(g.levels) == 0 {
		g.mu.Unlock()
		return g.wrap("unlock", ErrNotHeld)
	}
	taken := g.levels[len(g.levels)-1]
	g.levels = g.levels[:len(g.levels)-1]
	var h *holding
	if len(g.levels) == 0 {
		h, g.cur = g.cur, nil
	}
	g.mu.Unlock()
	// The level leaves the group before its members are released, so that
	// another goroutine's Lock, served as soon as they are, finds the
	// group free; and the hold's watcher stops first, so that those
	// releases do not read as a loss.
	if h != nil {
		h.end()
	}
	return g.wrap("unlock", g.release(ctx, taken))
}

// Done returns a channel that is closed when the group's current hold
// ends: the final Unlock, or a loss: for New, any member's hold ending;
// for NewQuorum, fewer than a majority of members still held. When the
// group holds nothing it returns a closed channel. After a loss the
// members still held stay held until Unlock releases them.
func (g *Group) Done() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur == nil {
		return closed
	}
	return g.cur.done
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// keep records a level that took the members taken. It reports false,
// recording nothing, when fewer than the group needs are still held: a
// member's hold ended (its fixed lease ran out) before the group had the
// rest.
func (g *Group) keep(taken []int) bool {
	dones := make([]<-chan struct{}, 0, len(taken))
	for _, i := range taken {
		if d := g.members[i].Done(); !isClosed(d) {
			dones = append(dones, d)
		}
	}
	if len(dones) < g.need {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.levels = append(g.levels, taken)
	if g.cur == nil {
		g.cur = watchHold(dones, g.need)
	}
	return true
}

// release releases one level of each member in taken, in parallel: a
// member whose server is down does not delay the others. It runs without
// ctx's cancellation, bounded by hold.ReleaseTimeout.
func (g *Group) release(ctx context.Context, taken []int) error {
	ctx, cancel := hold.ReleaseContext(ctx)
	defer cancel()
	errs := make([]error, len(taken))
	var wg sync.WaitGroup
	for k, i := range taken {
		wg.Go(func() { errs[k] = g.members[i].Unlock(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wrap wraps err with the package, the operation and the group's members.
func (g *Group) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("multilock: %s %s: %w", op, g.label, err)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
