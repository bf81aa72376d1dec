package script

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	fairAcquire      = load("fairlock_acquire.lua")
	fairUnlock       = load("fairlock_unlock.lua")
	fairRenew        = load("fairlock_renew.lua")
	fairForceUnlock  = load("fairlock_forceunlock.lua")
	fairLeave        = load("fairlock_leave.lua")
	electionProclaim = load("election_proclaim.lua")
)

// FairKeys names the keys and channels of one fair lock.
type FairKeys struct {
	Lock     string
	Queue    string
	Timeouts string
	Fence    string
	Waiter   string   // prefix of the waiters' channels (+ owner id)
	Places   string   // prefix of the waiters' places (+ owner id)
	Others   []string // keyspace.Names.Others: refuse the name while one exists
}

func (k FairKeys) line() []string { return []string{k.Lock, k.Queue, k.Timeouts} }

// FairTakeArgs are the arguments of FairTake.
type FairTakeArgs struct {
	ID         string // "<owner id>:<n>", one per wait, never reused
	Lease      time.Duration
	Fencing    bool
	Patience   time.Duration // how long a refused attempt keeps its place; 0 never joins
	Sharded    bool          // notify with SPUBLISH
	GrantLease time.Duration // bounds a grant to the waiter first in line
	Deadline   int64         // server time in ms
	Seq        uint64        // the attempt's number, named by its place and a grant
}

// FairTake runs fairlock_acquire.lua for hold a.ID.
func FairTake(ctx context.Context, c Processor, k FairKeys, a FairTakeArgs) AcquireCmd {
	keys := append(append(k.line(), k.Fence, k.Places+OwnerOf(a.ID)), k.Others...)
	// An election's ARGV[10..12] are "" for a fair lock.
	return AcquireCmd{fairAcquire.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Fencing), patienceMs(a.Patience),
		k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, a.Deadline, "", "", "", a.Seq)}
}

// FairUnlock runs fairlock_unlock.lua for hold a.ID.
func FairUnlock(ctx context.Context, c Processor, k FairKeys, a ReleaseArgs) UnlockCmd {
	return UnlockCmd{fairUnlock.run(ctx, c, append(k.line(), k.Fence), a.ID, ms(a.Lease), k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places)}
}

// FairRenew runs fairlock_renew.lua for hold id.
func FairRenew(ctx context.Context, c redis.Scripter, k FairKeys, id string, lease time.Duration, sharded bool) RenewCmd {
	return RenewCmd{cmd: fairRenew.queue(ctx, c, k.line(), id, ms(lease), k.Waiter, flag(sharded))}
}

// FairForceUnlock runs fairlock_forceunlock.lua; the reply is a Force*.
func FairForceUnlock(ctx context.Context, c Processor, k FairKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	args := append([]any{k.Waiter, flag(sharded), ms(ttl), ""}, aim...)
	return IntCmd{fairForceUnlock.run(ctx, c, append(k.line(), receipt), args...)}
}

// FairLeave runs fairlock_leave.lua for hold id; the reply is a Left*.
func FairLeave(ctx context.Context, c Processor, k FairKeys, id string, sharded bool) IntCmd {
	return IntCmd{fairLeave.run(ctx, c, append(k.line(), k.Places+OwnerOf(id)), id, k.Waiter, flag(sharded))}
}

// ElectionKeys names an election's keys: its fair lock's and its own.
type ElectionKeys struct {
	FairKeys
	Changes string // publishes every change of leader or value
	Values  string // prefix of the candidates' value keys (+ owner id)
}

// Candidacy is one attempt of a candidate to lead; a refused one keeps
// its value as long as its place.
type Candidacy struct {
	FairTakeArgs // Fencing set: the token is the term
	Value        string
}

// ElectionCampaign runs fairlock_acquire.lua for hold a.ID, as FairTake.
func ElectionCampaign(ctx context.Context, c Processor, k ElectionKeys, a Candidacy) AcquireCmd {
	owner := OwnerOf(a.ID)
	keys := append(append(k.line(), k.Fence, k.Places+owner, k.Values+owner), k.Others...)
	return AcquireCmd{fairAcquire.run(ctx, c, keys, a.ID, ms(a.Lease), flag(a.Fencing), patienceMs(a.Patience),
		k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, a.Deadline, k.Changes, a.Value, k.Values, a.Seq)}
}

// ElectionResign runs fairlock_unlock.lua for the leader, as FairUnlock.
func ElectionResign(ctx context.Context, c Processor, k ElectionKeys, a ReleaseArgs) UnlockCmd {
	return UnlockCmd{fairUnlock.run(ctx, c, append(k.line(), k.Fence), a.ID, ms(a.Lease), k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, k.Changes, k.Values)}
}

// ElectionLeave runs fairlock_leave.lua for a candidate, as FairLeave.
func ElectionLeave(ctx context.Context, c Processor, k ElectionKeys, id string, sharded bool) IntCmd {
	owner := OwnerOf(id)
	return IntCmd{fairLeave.run(ctx, c, append(k.line(), k.Places+owner, k.Values+owner), id, k.Waiter, flag(sharded))}
}

// ElectionForceUnlock runs fairlock_forceunlock.lua, as FairForceUnlock.
func ElectionForceUnlock(ctx context.Context, c Processor, k ElectionKeys, receipt string, ttl time.Duration, sharded bool, aim []any) IntCmd {
	args := append([]any{k.Waiter, flag(sharded), ms(ttl), k.Changes}, aim...)
	return IntCmd{fairForceUnlock.run(ctx, c, append(k.line(), receipt), args...)}
}

// Outcomes of ElectionProclaim.
const (
	ProclaimLater  = -1 // a later proclaim of the owner has run: nothing changed
	ProclaimNotLed = 0  // the hold does not lead in that term: nothing changed
	ProclaimDone   = 1  // the hold leads in that term, with that value
)

// ElectionProclaim runs election_proclaim.lua; a rerun changes nothing.
func ElectionProclaim(ctx context.Context, c redis.Scripter, k ElectionKeys, id string, term, seq uint64, value string, sharded bool) IntCmd {
	return IntCmd{electionProclaim.queue(ctx, c, []string{k.Lock}, id, strconv.FormatUint(term, 10), seq, value, k.Changes, flag(sharded))}
}
