package perclient

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Place is a waiter's place in a lock's line in Redis, which lapses
// unless refreshed: a key (rlock), or a member of a sorted set (rwlock).
type Place struct {
	Key string // the place, or with Member its sorted set
	// Member, if set, is the place, scored with when it lapses on the
	// server's clock (ms); a refresh never brings back one that left.
	Member string
	TTL    time.Duration // how long the place lives from a refresh
	Lock   string        // the lock's key
	Queue  string        // if set, the line's list, whose expiry each refresh sets to TTL too
	// Value, if set, returns the place's value (not a Member's) after the
	// waiter's last refused attempt; called on its goroutine after each.
	Value func() string
}

const (
	// KeepPeriod is how often the keeper refreshes places and looks at
	// their locks: well within the grant lease (hold.GrantLease; a fairlock
	// waiter whose timeout is shorter also refreshes its place by its own
	// attempts, every third of it), and soon after a grant to a dead waiter
	// runs out, for those behind it.
	KeepPeriod = time.Second
	keepBatch  = 1000 // bounds one pipeline, as the watchdog's
	// expiryMargin is how late after a lease's end the keeper looks: the
	// server expires a key at its time or just after.
	expiryMargin = 2 * time.Millisecond
)

// keeper refreshes the places of a client's parked waiters, one pipeline
// a period, and wakes those whose place is gone (granted, or lapsed) or
// whose lock is free (a dead waiter's grant or holder's lease ran out,
// nobody told), and all after a failed round. Its goroutine runs while it
// has places to keep.
type keeper struct {
	rdb     redis.UniversalClient
	mu      sync.Mutex // guards kept, running, round
	kept    map[*Kept]struct{}
	running bool
	left    chan struct{}      // cap 1: a waiter left
	round   context.CancelFunc // cancels the round in flight, if any
	// server is the server's clock as read by a TIME sent at serverAt: a
	// score adds the monotonic time since, which a step of our wall clock
	// does not move. Only the goroutine uses them.
	server, serverAt time.Time
	wall             func() time.Time // time.Now while the server's clock is unknown; tests step it
}

func newKeeper(rdb redis.UniversalClient) *keeper {
	return &keeper{rdb: rdb, kept: make(map[*Kept]struct{}), left: make(chan struct{}, 1), wall: time.Now}
}

// Kept is one waiter's place, kept by the client's keeper until Stop.
type Kept struct {
	k      *keeper
	place  Place
	kick   chan struct{} // cap 1: the waiter must attempt now
	mu     sync.Mutex    // guards expect, base
	expect string        // the place's value after the last refused attempt
	base   time.Time     // when the last refresh that found expect was sent
}

// Keep has the client's keeper keep place, from a period on (the attempt
// that set it has just refreshed it).
func (c *Client) Keep(place Place) *Kept {
	k := c.keeper
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

// Expect records the place's value after the waiter's last refused
// attempt, which a refresh must find to count for Base.
func (kp *Kept) Expect(value string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.expect = value
}

// C is where the keeper tells the waiter to attempt now.
func (kp *Kept) C() <-chan struct{} { return kp.kick }

// Base returns when the last refresh that found the Expect value was sent
// (zero: none yet); a release that granted the lock to that attempt ran
// after, as neither an earlier attempt nor a GETEX writes that value.
func (kp *Kept) Base() time.Time {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.base
}

// Stop ends the keeping of the place, and leaves the place to the waiter.
func (kp *Kept) Stop() {
	k := kp.k
	k.mu.Lock()
	delete(k.kept, kp)
	empty := len(k.kept) == 0
	if empty && k.round != nil {
		k.round() // the goroutine ends now
	}
	k.mu.Unlock()
	if empty {
		signal(k.left)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run refreshes the places every KeepPeriod until none is left, looking
// once in between at the locks a round found running out before the next.
func (k *keeper) run() {
	timer := time.NewTimer(KeepPeriod)
	defer timer.Stop()
	var soon expiring
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
		// By lock, a lock's places share a batch (or two) and one PTTL.
		slices.SortFunc(kept, func(a, b *Kept) int { return strings.Compare(a.place.Lock, b.place.Lock) })
		for start := 0; start < len(kept); start += keepBatch {
			k.refresh(ctx, kept[start:min(start+keepBatch, len(kept))], &soon)
		}
		k.mu.Lock()
		k.round = nil
		k.mu.Unlock()
		cancel()
		// Rounds start a period apart however long one took: an rwlock
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

// expiring is the locks found running out before the next round, with
// their waiters.
type expiring struct {
	locks map[string][]*Kept
	at    time.Time // just after the first of those leases runs out
}

func (e *expiring) add(lock string, kp *Kept, at time.Time) {
	if e.locks == nil {
		e.locks = make(map[string][]*Kept)
	}
	e.locks[lock] = append(e.locks[lock], kp)
	if e.at.IsZero() || at.Before(e.at) {
		e.at = at
	}
}

// look wakes the waiters of the locks found free, as soon as an attempt
// would have; a lease renewed meanwhile costs one PTTL more, not a round.
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
				signal(kp.kick)
			}
		}
	}
}

// snapshot returns the places to keep, recording the cancel of the round
// about to run; none (nil) ends the goroutine.
func (k *keeper) snapshot(round context.CancelFunc) []*Kept {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kept) == 0 {
		k.running = false
		return nil
	}
	k.round = round
	return slices.Collect(maps.Keys(k.kept))
}

// refresh runs one pipeline for kept: a GETEX for each key place, a ZADD
// XX GT for each member (with a PEXPIRE GT for its set and a TIME for the
// next scores), a PTTL for each lock, and a PEXPIRE for each line.
func (k *keeper) refresh(ctx context.Context, kept []*Kept, soon *expiring) {
	if ctx.Err() != nil {
		return // nobody is left to keep
	}
	ctx, cancel := context.WithTimeout(ctx, KeepPeriod)
	defer cancel()
	pipe := k.rdb.Pipeline()
	var clock *redis.Cmd
	if i := slices.IndexFunc(kept, func(kp *Kept) bool { return kp.place.Member != "" }); i >= 0 {
		route := kept[i].place.Key
		if k.server.IsZero() { // unknown: read it first, or score on our clock
			sent := time.Now()
			k.setClock(serverTime(ctx, k.rdb, route), sent)
		}
		clock = serverTime(ctx, pipe, route)
	}
	places := make([]*redis.StringCmd, len(kept))
	members := make([]*redis.IntCmd, len(kept))
	expect := make([]string, len(kept))
	sets := make(map[string]*redis.Cmd) // each set's PEXPIRE
	// One ZADD a member, shared by a handle's waiters of one mode: a second
	// one, reporting no change, would wake its waiter each round.
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
	queues := make(map[string]bool)
	for _, kp := range kept {
		lock := kp.place.Lock
		if _, ok := locks[lock]; !ok {
			locks[lock] = pipe.PTTL(ctx, lock)
		}
		if q := kp.place.Queue; q != "" && !queues[q] {
			queues[q] = true
			pipe.PExpire(ctx, q, kp.place.TTL)
		}
	}
	sent := time.Now()
	_, _ = pipe.Exec(ctx)
	read := time.Now() // after the server read every PTTL
	if clock != nil {
		k.setClock(clock, sent)
	}
	for i, kp := range kept {
		ttl, err := locks[kp.place.Lock].Result()
		if err == nil && ttl > 0 && ttl < KeepPeriod {
			soon.add(kp.place.Lock, kp, read.Add(ttl+expiryMargin))
		}
		wake := err != nil || ttl == -2 // go-redis returns -2 (missing) as is
		if members[i] != nil {
			// 0: the member left (or a script just set it later); a set
			// not extended would lapse with the member.
			n, err := members[i].Result()
			wake = wake || err != nil || n == 0 || sets[kp.place.Key].Err() != nil
		} else {
			value, err := places[i].Result() // redis.Nil: gone
			wake = wake || err != nil
			if err == nil && value == expect[i] {
				kp.mu.Lock()
				if sent.After(kp.base) {
					kp.base = sent
				}
				kp.mu.Unlock()
			}
		}
		if wake {
			signal(kp.kick)
		}
	}
}

// keepMember queues a member's score moved TTL ahead if there and later
// (a script may have just set it), and once per set its expiry as far.
func (k *keeper) keepMember(ctx context.Context, pipe redis.Pipeliner, p Place, sets map[string]*redis.Cmd) *redis.IntCmd {
	lapse := k.serverNow().Add(p.TTL).UnixMilli()
	cmd := pipe.ZAddArgs(ctx, p.Key, redis.ZAddArgs{XX: true, GT: true, Ch: true, Members: []redis.Z{{Score: float64(lapse), Member: p.Member}}})
	if sets[p.Key] == nil {
		// In a script: twemproxy closes the connection on PEXPIRE GT.
		sets[p.Key] = pipe.Eval(ctx, "return redis.call('PEXPIRE', KEYS[1], ARGV[1], 'GT')", []string{p.Key}, p.TTL.Milliseconds())
	}
	return cmd
}

// serverTime queues (or sends) a TIME keyed with route, for a proxy or a
// cluster to route (twemproxy closes the connection on a bare TIME).
func serverTime(ctx context.Context, c redis.Scripter, route string) *redis.Cmd {
	return c.Eval(ctx, "return redis.call('TIME')", []string{route})
}

// setClock records clock, a TIME sent at sent: scores based on it come
// out late by a trip, never early.
func (k *keeper) setClock(clock *redis.Cmd, sent time.Time) {
	v, err := clock.Int64Slice()
	if err != nil || len(v) != 2 {
		return
	}
	k.server, k.serverAt = time.Unix(v[0], v[1]*int64(time.Microsecond)), sent
}

func (k *keeper) serverNow() time.Time {
	if k.server.IsZero() {
		return k.wall()
	}
	return k.server.Add(time.Since(k.serverAt))
}
