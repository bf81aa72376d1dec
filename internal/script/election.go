package script

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var electionProclaim = load("election_proclaim.lua")

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
