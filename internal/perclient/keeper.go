package perclient

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Place is a waiter's place in a lock's line in Redis: a key whose expiry
// is the waiter's liveness (see package rlock), or a member of a sorted
// set whose score is when it lapses (a waiting rwlock reader's or
// writer's announcement). A waiter whose place the client's keeper keeps
// need not attempt to keep it: it sleeps until a release grants it the
// lock or wakes it, or the keeper finds the lock free.
type Place struct {
	Key string // the place, or with Member the sorted set it is in
	// Member, if set, is the place: a member of the sorted set Key, scored
	// with the time it lapses on the server's clock, in milliseconds. A
	// refresh moves that time TTL ahead, and the set's expiry with it,
	// but never brings back a member that left.
	Member string
	TTL    time.Duration // how long the place lives from a refresh
	Lock   string        // the lock's key
	// Queue, if set, is the line's list, whose expiry each refresh sets
	// to TTL too (rlock: it lives as long as its waiters' places).
	Queue string
	// Value, if set, returns what the place holds after the waiter's last
	// refused attempt (the hold id it waits with); called on the waiter's goroutine after
	// each. Not for a Member.
	Value func() string
}

// KeepPeriod is how often a client's keeper refreshes the places of its
// parked waiters, and looks at their locks: well within a place's TTL
// (the grant lease, 3s: see hold.GrantLease; a fairlock waiter whose
// timeout is shorter refreshes its place by its own attempts too, every
// third of that timeout), and within the grant lease of a grant to a dead
// waiter running out, for the live waiters behind it.
const KeepPeriod = time.Second

// keepBatch bounds one pipeline of the keeper, as the watchdog bounds its
// renewals.
const keepBatch = 1000

// keeper keeps the places of one client's parked waiters, all in one
// pipeline a period: a GETEX for each place (a ZADD XX GT for a member of
// a sorted set, and a PEXPIRE GT for the set), a PTTL for each lock they
// wait on, and a PEXPIRE for each line that lives as long as its places.
// The waiter of a place found gone (a release granted the
// lock and took the place, or the place lapsed) is woken to attempt, as
// are the waiters of a lock found free (a grant to a dead waiter ran out,
// or a holder's lease, with nobody told), and every waiter after a
// failed round. Its goroutine runs while it has places to keep.
type keeper struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	kept    map[*Kept]struct{}
	running bool
	left    chan struct{}      // tells the goroutine, cap 1, that a waiter left
	round   context.CancelFunc // cancels the round in flight, if any

	// server is the server's clock as the last round that kept a member
	// of a sorted set read it (TIME), and serverAt when that TIME was sent,
	// on our clock with its monotonic reading: a member's score is server
	// plus the time since serverAt on the monotonic clock, which a step of
	// our wall clock (an NTP step, a VM resumed) does not move. Only the
	// keeper's goroutine uses them.
	server, serverAt time.Time

	// wall reads the client's wall clock (time.Now), for scores while the
	// server's clock is unknown; a test replaces it before the first Keep
	// to step the clock.
	wall func() time.Time
}

func newKeeper(rdb redis.UniversalClient) *keeper {
	return &keeper{rdb: rdb, kept: make(map[*Kept]struct{}), left: make(chan struct{}, 1), wall: time.Now}
}

// Kept is one waiter's place, kept by the client's keeper until Stop.
type Kept struct {
	k     *keeper
	place Place
	kick  chan struct{} // cap 1: the waiter must attempt now

	mu     sync.Mutex
	expect string    // the place's value after the waiter's last refused attempt
	base   time.Time // when the last refresh that found expect in the place was sent
}

// Keep has the client's keeper keep place, from one period from now (the
// attempt that set it has just refreshed it).
func (c *Client) Keep(place Place) *Kept {
	return c.keeper.keep(place)
}

func (k *keeper) keep(place Place) *Kept {
	kp := &Kept{k: k, place: place, kick: make(chan struct{}, 1)}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept[kp] = struct{}{}
	if !k.running {
		k.running = true
		go k.run()
	}
	return kp
}

// Expect records what the place holds after the waiter's last refused
// attempt: a refresh counts for Base only when it finds that value.
func (kp *Kept) Expect(value string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.expect = value
}

// C is where the keeper tells the waiter to attempt now.
func (kp *Kept) C() <-chan struct{} { return kp.kick }

// Base returns when the last refresh that found the place in Redis, with
// the value of the waiter's last refused attempt (Expect), was sent; the
// zero time when none has yet. A release that granted the lock to that
// attempt (taking the place) ran after it: no later run of an earlier
// attempt (a script executed late) writes that value again, and the
// refresh (GETEX) never writes one.
func (kp *Kept) Base() time.Time {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.base
}

// Stop ends the keeping of the place. The place itself is left alone:
// it is the waiter's to delete, or to let lapse.
func (kp *Kept) Stop() {
	k := kp.k
	k.mu.Lock()
	delete(k.kept, kp)
	empty := len(k.kept) == 0
	if empty && k.round != nil {
		k.round() // nothing left to keep: the goroutine ends now
	}
	k.mu.Unlock()
	if empty {
		select {
		case k.left <- struct{}{}:
		default:
		}
	}
}

func (kp *Kept) wake() {
	select {
	case kp.kick <- struct{}{}:
	default:
	}
}

// run refreshes the places every KeepPeriod, and returns once none is
// left to keep. Between two rounds it looks again, once, at the locks
// whose lease a round found running out before the next (see refresh).
func (k *keeper) run() {
	timer := time.NewTimer(KeepPeriod)
	defer timer.Stop()
	var soon expiring // locks to look at again before the next round
	var due time.Time // the next round
	for {
		select {
		case <-k.left:
			if k.snapshot(nil) == nil {
				return
			}
			continue // others remain: the period runs on
		case <-timer.C:
		}
		if len(soon.locks) > 0 {
			k.look(soon.locks)
			soon = expiring{}
			timer.Reset(time.Until(due))
			continue
		}
		began := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		kept := k.snapshot(cancel)
		if kept == nil {
			cancel()
			return
		}
		// Sorted by lock, a lock's places fall in one batch (or two),
		// which reads the lock's PTTL once.
		slices.SortFunc(kept, func(a, b *Kept) int { return strings.Compare(a.place.Lock, b.place.Lock) })
		for start := 0; start < len(kept); start += keepBatch {
			k.refresh(ctx, kept[start:min(start+keepBatch, len(kept))], &soon)
		}
		k.mu.Lock()
		k.round = nil
		k.mu.Unlock()
		cancel()
		// Rounds start a period apart, however long one took: an rwlock
		// announcement lives only two periods from its last refresh.
		due = began.Add(KeepPeriod)
		if len(soon.locks) > 0 && soon.at.Before(due) {
			timer.Reset(time.Until(soon.at))
		} else {
			soon = expiring{}
			timer.Reset(time.Until(due))
		}
	}
}

// expiring is the locks a round found with a lease that runs out before
// the next round, their waiters, and when to look at them again.
type expiring struct {
	locks map[string][]*Kept
	at    time.Time // just after the first of those leases runs out
}

func (e *expiring) add(lock string, kept []*Kept, at time.Time) {
	if e.locks == nil {
		e.locks = make(map[string][]*Kept)
	}
	e.locks[lock] = append(e.locks[lock], kept...)
	if e.at.IsZero() || at.Before(e.at) {
		e.at = at
	}
}

// look reads the PTTL of locks, and wakes the waiters of those found
// free: a grant to a dead waiter, or a dead holder's lease, ran out, and
// they learn of it as soon as they would have by attempting. A lock
// whose lease was renewed meanwhile waits for the next round: a lock of
// a short lease costs one more PTTL a period, not a round.
func (k *keeper) look(locks map[string][]*Kept) {
	ctx, cancel := context.WithTimeout(context.Background(), KeepPeriod)
	defer cancel()
	pipe := k.rdb.Pipeline()
	ttls := make(map[string]*redis.DurationCmd, len(locks))
	for lock := range locks {
		ttls[lock] = pipe.PTTL(ctx, lock)
	}
	_, _ = pipe.Exec(ctx)
	for lock, cmd := range ttls {
		if ttl, err := cmd.Result(); err != nil || ttl == -2 {
			for _, kp := range locks[lock] {
				kp.wake()
			}
		}
	}
}

// snapshot returns the places to keep; none (nil) ends the goroutine.
// round, if not nil, cancels the round about to run them.
func (k *keeper) snapshot(round context.CancelFunc) []*Kept {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kept) == 0 {
		k.running = false
		return nil
	}
	if round != nil {
		k.round = round
	}
	kept := make([]*Kept, 0, len(k.kept))
	for kp := range k.kept {
		kept = append(kept, kp)
	}
	return kept
}

// expiryMargin is how long after a lock's lease should have run out the
// keeper looks again: the server expires a key at its time or just after.
const expiryMargin = 2 * time.Millisecond

// refresh runs one pipeline for kept: a GETEX for each place (which
// extends it, and reads its value: nil when gone) or a ZADD XX GT for
// each member of a sorted set (with a PEXPIRE GT for the set, and a TIME
// for the next round's scores), a PTTL for each lock, and a PEXPIRE for
// each line that has one. It adds to soon the locks
// whose lease runs out before the next round (a grant to a dead waiter, or
// a dead holder's lease, if nobody renews it), to be looked at again just
// after.
func (k *keeper) refresh(ctx context.Context, kept []*Kept, soon *expiring) {
	if ctx.Err() != nil {
		return // cancelled: nobody is left to keep
	}
	ctx, cancel := context.WithTimeout(ctx, KeepPeriod)
	defer cancel()
	pipe := k.rdb.Pipeline()
	var clock *redis.Cmd // read on the way for the next round's scores
	if i := slices.IndexFunc(kept, func(kp *Kept) bool { return kp.place.Member != "" }); i >= 0 {
		route := kept[i].place.Key
		if k.server.IsZero() {
			k.readClock(ctx, route)
		}
		clock = serverTime(ctx, pipe, route)
	}
	places := make([]*redis.StringCmd, len(kept))
	members := make([]*redis.IntCmd, len(kept))
	expect := make([]string, len(kept))
	sets := make(map[string]*redis.Cmd) // each set's PEXPIRE
	// One ZADD a member: the waiters of one handle that wait for one mode
	// share its announcement, and a second ZADD GT with the same score
	// would report no change, telling that waiter to attempt each round.
	zadds := make(map[[2]string]*redis.IntCmd)
	for i, kp := range kept {
		if kp.place.Member != "" {
			id := [2]string{kp.place.Key, kp.place.Member}
			if zadds[id] == nil {
				zadds[id] = k.keepMember(ctx, pipe, kp.place, sets)
			}
			members[i] = zadds[id]
			continue
		}
		kp.mu.Lock()
		expect[i] = kp.expect
		kp.mu.Unlock()
		places[i] = pipe.GetEx(ctx, kp.place.Key, kp.place.TTL)
	}
	locks := make(map[string]*redis.DurationCmd)
	waiting := make(map[string][]*Kept) // by lock
	queues := make(map[string]bool)
	for _, kp := range kept {
		lock := kp.place.Lock
		if _, ok := locks[lock]; !ok {
			locks[lock] = pipe.PTTL(ctx, lock)
		}
		waiting[lock] = append(waiting[lock], kp)
		if q := kp.place.Queue; q != "" && !queues[q] {
			queues[q] = true
			pipe.PExpire(ctx, q, kp.place.TTL)
		}
	}
	sent := time.Now()
	_, _ = pipe.Exec(ctx)
	read := time.Now() // the server read every PTTL before this
	if clock != nil {
		k.setClock(clock, sent)
	}
	for lock, cmd := range locks {
		// A lease that ends before the next round, unless renewed: it
		// ends at the latest ttl after read.
		if ttl, err := cmd.Result(); err == nil && ttl > 0 && ttl < KeepPeriod {
			soon.add(lock, waiting[lock], read.Add(ttl+expiryMargin))
		}
	}
	for i, kp := range kept {
		free, ferr := locks[kp.place.Lock].Result()
		if members[i] != nil {
			// 0: the member left (or a script just set it later): the
			// waiter attempts, which finds out.
			n, err := members[i].Result()
			if err == nil {
				err = sets[kp.place.Key].Err() // the set would lapse with the member
			}
			if err != nil || n == 0 || ferr != nil || free == -2 {
				kp.wake()
			}
			continue
		}
		value, err := places[i].Result()
		gone := err == redis.Nil
		if gone {
			err = nil
		}
		if err == nil && !gone && value == expect[i] {
			kp.mu.Lock()
			if sent.After(kp.base) {
				kp.base = sent
			}
			kp.mu.Unlock()
		}
		// PTTL of a missing key is -2; go-redis returns it as a
		// duration of -2 (no unit).
		if err != nil || gone || ferr != nil || free == -2 {
			kp.wake()
		}
	}
}

// keepMember queues the refresh of a place that is a member of a sorted
// set: its score moved TTL ahead on the server's clock, only if it is
// still there and that is later (a script may have just set it); and, once
// a round per set, the set's expiry moved as far, only if that is later
// (as the scripts set it: the set lives as long as its latest member).
func (k *keeper) keepMember(ctx context.Context, pipe redis.Pipeliner, p Place, sets map[string]*redis.Cmd) *redis.IntCmd {
	lapse := k.serverNow().Add(p.TTL).UnixMilli()
	cmd := pipe.ZAddArgs(ctx, p.Key, redis.ZAddArgs{XX: true, GT: true, Ch: true, Members: []redis.Z{{Score: float64(lapse), Member: p.Member}}})
	if sets[p.Key] == nil {
		// In a script: a proxy (twemproxy) closes the connection on a
		// PEXPIRE with options, which it cannot parse.
		sets[p.Key] = pipe.Eval(ctx, "return redis.call('PEXPIRE', KEYS[1], ARGV[1], 'GT')", []string{p.Key}, p.TTL.Milliseconds())
	}
	return cmd
}

// readClock reads the server's clock before the first round that keeps a
// member of a sorted set; after that each such round reads it on the way.
// A failure leaves it unknown: that round's scores are on our wall clock,
// and the next round reads it again.
func (k *keeper) readClock(ctx context.Context, route string) {
	sent := time.Now()
	k.setClock(serverTime(ctx, k.rdb, route), sent)
}

// serverTime queues (or sends) a read of the server's clock: TIME in a
// script with a key, route, which a proxy forwards to the key's server
// (twemproxy closes the connection on a bare TIME) and a cluster client
// to the key's node.
func serverTime(ctx context.Context, c redis.Scripter, route string) *redis.Cmd {
	return c.Eval(ctx, "return redis.call('TIME')", []string{route})
}

// setClock records the server's clock from clock, a TIME sent at sent.
// The server read it after sent: the scores based on it may come out
// later by a trip, never earlier.
func (k *keeper) setClock(clock *redis.Cmd, sent time.Time) {
	v, err := clock.Int64Slice()
	if err != nil || len(v) != 2 {
		return
	}
	k.server, k.serverAt = time.Unix(v[0], v[1]*int64(time.Microsecond)), sent
}

// serverNow returns the server's clock now, as far as the keeper knows it:
// the last reading moved on by the monotonic time since; our wall clock
// while it has none.
func (k *keeper) serverNow() time.Time {
	if k.server.IsZero() {
		return k.wall()
	}
	return k.server.Add(time.Since(k.serverAt))
}
