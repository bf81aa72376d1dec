package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/perclient"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// ErrNoLeader is returned by Leader when nobody leads.
var ErrNoLeader = errors.New("no leader")

// ErrNotLeader is returned by Proclaim when the handle does not lead. It
// wraps ErrNotHeld, the value every redisync package returns for a hold
// the handle does not have.
var ErrNotLeader error = notLeader{}

type notLeader struct{}

func (notLeader) Error() string { return "not the leader" }
func (notLeader) Unwrap() error { return errs.ErrNotHeld }

// ErrNotHeld is wrapped by ErrNotLeader. It is the same value in every
// redisync package.
var ErrNotHeld = errs.ErrNotHeld

// ErrLost is the reason a leadership was lost, passed to the [WithOnLost]
// hook.
var ErrLost = errs.ErrLost

// ErrWrongType is matched by errors for a name Redis already uses for
// another primitive (or a key of another type).
var ErrWrongType = errs.ErrWrongType

// ErrOldServer is matched by the error of every call on a server older
// than Redis 7.0 (any Valkey passes): the message names both versions,
// and nothing is changed in Redis. It is the same value in every redisync
// package.
var ErrOldServer = errs.ErrOldServer

// Leader is who leads an election, as the other candidates and observers
// see it.
type Leader struct {
	// Value is the leader's value: what it campaigned with, or proclaimed
	// since.
	Value string
	// Term is the leader's term: a fencing token, higher than every
	// earlier term of the election.
	Term uint64
}

// Election is a handle on a leader election: a candidate, an observer, or
// both. It is safe for concurrent use; a handle leads at most once at a
// time.
type Election struct {
	l    *hold.Lock
	b    hold.Base
	cfg  config
	keys script.ElectionKeys

	// campaigning lets one Campaign of the handle at a time wait: a second
	// one returns at once when the first has won.
	campaigning *semaphore.Weighted
	// said numbers the handle's proclaims (see lua/election_proclaim.lua).
	said atomic.Uint64
}

// New returns a handle on the election called name. It does no I/O. It
// panics if rdb is nil, name is empty or an option is invalid.
func New(rdb redis.UniversalClient, name string, opts ...Option) *Election {
	b := hold.NewBase("election", rdb, name)
	cfg := newConfig(opts)
	n := b.Keys
	e := &Election{b: b, cfg: cfg, campaigning: semaphore.NewWeighted(1), keys: script.ElectionKeys{
		FairKeys: script.FairKeys{Lock: n.Lock(), Queue: n.Queue(), Timeouts: n.Timeouts(), Fence: n.Fence(), Waiter: n.WaiterChannel(""), Places: n.Place(""), Others: n.Others(keyspace.KindMutex)},
		Changes:  n.Channel(), Values: n.Value(""),
	}}
	// The leadership is a fair lock's hold with fencing: candidates wait
	// in line, each on a channel of its own on which a resignation grants
	// it the leadership, and the hold's token is the term.
	e.l = hold.NewLock(hold.Kind{
		Base: b, Keeping: cfg.Keeping, Verbs: [2]string{"campaign", "resign"},
		Acquire: e.acquire, Release: e.release, Renew: e.renew, ForceUnlock: e.forceUnlock, Leave: e.leave,
		Grants: true, Fencing: true, GrantLease: grantLease(),
		Channel:  func(hold.Mode) string { return n.WaiterChannel(b.Owner) },
		MaxSleep: cfg.maxSleep(),
		Place: func(hold.Mode) *perclient.Place {
			return &perclient.Place{Key: n.Place(b.Owner), TTL: grantLease(), Lock: n.Lock()}
		},
	})
	return e
}

// valueKey carries, in the ctx of a campaign, the value it campaigns with,
// to the attempts the engine makes for it.
type valueKey struct{ e *Election }

func (e *Election) with(ctx context.Context, value string) context.Context {
	return context.WithValue(ctx, valueKey{e}, value)
}

// acquire runs one attempt of a candidate: it leads, or it joins the line
// (or keeps its place there) with its value, for WaiterTimeout.
func (e *Election) acquire(ctx context.Context, _ hold.Mode, a hold.Asking) (hold.Grant, error) {
	value, _ := ctx.Value(valueKey{e}).(string)
	var patience time.Duration
	if a.Blocking {
		patience = WaiterTimeout
	}
	res, err := script.ElectionCampaign(ctx, e.b.RDB, e.keys, script.Candidacy{Value: value, FairTakeArgs: script.FairTakeArgs{
		ID: a.ID, Lease: e.cfg.Lease(), Fencing: true, Patience: patience,
		GrantLease: hold.GrantLease, Sharded: e.b.Sharded, Deadline: a.Deadline, Seq: a.Seq,
	}}).Result()
	return hold.Granted(res), err
}

func (e *Election) release(ctx context.Context, _ hold.Mode, id string, _ uint64, _ bool) (hold.Released, error) {
	u, err := script.ElectionResign(ctx, e.b.RDB, e.keys, script.ReleaseArgs{ID: id, Lease: e.cfg.Lease(), Sharded: e.b.Sharded, GrantLease: hold.GrantLease}).Result()
	return hold.UnlockedGrant(u), err
}

func (e *Election) renew(ctx context.Context, s redis.Scripter, id string) func() (bool, error) {
	return script.FairRenew(ctx, s, e.keys.FairKeys, id, e.cfg.Lease(), e.b.Sharded).Result
}

func (e *Election) forceUnlock(ctx context.Context, receipt string, aim []any) (int64, error) {
	return script.ElectionForceUnlock(ctx, e.b.RDB, e.keys, receipt, exactly.ReceiptTTL, e.b.Sharded, aim).Result()
}

// leave takes the handle out of the line after a failed campaign, and
// reports whether a resignation made it the leader meanwhile.
func (e *Election) leave(ctx context.Context, _ hold.Mode, a hold.Asking) (bool, error) {
	n, err := script.ElectionLeave(ctx, e.b.RDB, e.keys, a.ID, e.b.Sharded).Result()
	return n == script.LeftGranted, err
}

// Name returns the name of the election.
func (e *Election) Name() string { return e.b.Name }

// Campaign waits until the handle leads the election with value, or ctx
// is done. A handle that leads already returns at once, its value
// unchanged (Proclaim changes it). Candidates lead in the order in which
// they joined the line, across processes; goroutines campaigning on one
// handle wait behind one another in the process, and return together
// once one of them won. On failure Campaign returns an error wrapping
// ctx.Err() or the Redis error and leaves nothing behind: no place in
// line, no value, no subscription. A value longer than MaxValueSize is
// refused, changing nothing.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := checkValue(value); err != nil {
		return e.wrap("campaign", err)
	}
	if err := e.campaigning.Acquire(ctx, 1); err != nil {
		return e.wrap("campaign", err)
	}
	defer e.campaigning.Release(1)
	if e.leads() {
		return nil
	}
	return e.l.Lock(e.with(ctx, value), hold.Exclusive)
}

// leads reports whether the handle leads, as far as it knows.
func (e *Election) leads() bool { return e.l.Tracker().Held(hold.Exclusive) }

// Resign steps down: the first live candidate in line leads next, at
// once. Resign of a handle that does not lead (it never did, resigned
// already, or lost its leadership) does nothing and returns nil. Within
// Run, fn's ctx resigns fn's leadership (and is then cancelled); a plain
// ctx does not.
//
// Resign runs even when ctx is done: it uses ctx's values without its
// cancellation, bounded by a timeout of its own (5s). If it fails
// nonetheless, the handle stops renewing its leadership and Done closes:
// Redis ends it when its lease runs out.
func (e *Election) Resign(ctx context.Context) error {
	err := e.l.Unlock(ctx, hold.Exclusive)
	if errors.Is(err, errs.ErrNotHeld) {
		return nil
	}
	return err
}

// Proclaim changes the value of the handle's leadership to value, without
// another election, and tells every observer. It returns an error
// wrapping ErrNotLeader when the handle does not lead, and changes
// nothing then. A value longer than MaxValueSize is refused, changing
// nothing. A proclaim whose reply was lost is sent again, and applies
// once.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if err := checkValue(value); err != nil {
		return e.wrap("proclaim", err)
	}
	id, term := e.l.Tracker().Hold()
	if term == 0 {
		return e.wrap("proclaim", ErrNotLeader)
	}
	n, err := script.ElectionProclaim(ctx, e.b.RDB, e.keys, id, term, e.said.Add(1), value, e.b.Sharded).Result()
	if err == nil && n == script.ProclaimNotLed {
		err = ErrNotLeader
	}
	// ProclaimLater: a proclaim of the handle sent after this one ran
	// first; this one counts as done just before it.
	return e.wrap("proclaim", err)
}

// ForceResign ends the leadership whoever has it, and reports whether
// anybody led: the first live candidate in line leads next, and observers
// are told. It is the operator's escape hatch for a leader that is stuck
// (redisync unlock --force runs it). The leader's handle learns of it at
// its next renewal: its Done closes and the ctx Run gives fn is
// cancelled. A run repeated after a lost reply reports what the first
// did; one that Redis runs late, after another leader took over, ends
// nothing.
func (e *Election) ForceResign(ctx context.Context) (bool, error) { return e.l.ForceUnlock(ctx) }

// Done returns a channel that is closed when the handle's leadership
// ends: Resign, a forced resignation, the lease running out, or a loss
// noticed by the watchdog. When the handle does not lead it returns a
// closed channel.
func (e *Election) Done() <-chan struct{} { return e.l.Done() }

// Term returns the term of the handle's leadership: a fencing token,
// higher than the term of every earlier leader of the election (see the
// package doc); 0 when the handle does not lead. It does no I/O.
func (e *Election) Term() uint64 { return e.l.Token() }

// Leader returns who leads the election, as Redis has it now. It returns
// an error wrapping ErrNoLeader when nobody leads.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	l, err := e.read(ctx)
	return l, e.wrap("leader", err)
}

// read reads the leader: the leadership's hash holds the leader's hold
// id, its term ('@token') and its value ('@value').
func (e *Election) read(ctx context.Context) (Leader, error) {
	f, err := e.b.RDB.HGetAll(ctx, e.keys.Lock).Result()
	if err != nil {
		return Leader{}, err
	}
	if len(f) == 0 {
		return Leader{}, ErrNoLeader
	}
	value, ok := f["@value"]
	if _, rw := f["mode"]; rw || !ok {
		return Leader{}, errs.NewWrongType(e.keys.Lock, "the lock hash has no value: the name is used by another kind of lock")
	}
	term, err := strconv.ParseUint(f["@token"], 10, 64)
	if err != nil {
		return Leader{}, fmt.Errorf("the leader's term %q is not a number", f["@token"])
	}
	return Leader{Value: value, Term: term}, nil
}

func (e *Election) wrap(op string, err error) error {
	return errs.Wrap("election", op, e.b.Name, err)
}

// checkValue refuses a value longer than MaxValueSize.
func checkValue(v string) error {
	if len(v) > MaxValueSize {
		return fmt.Errorf("a value of %d bytes is over the limit of %d bytes (64 KiB)", len(v), MaxValueSize)
	}
	return nil
}
