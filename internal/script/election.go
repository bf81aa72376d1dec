package script

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var electionProclaim = load("election_proclaim.lua")

// ElectionKeys names the keys and channels of one election. Its leadership
// is a fair lock's hold, kept by the fair lock's scripts, which the
// election's own keys and channel make an election's (see
// lua/fairlock_acquire.lua, ARGV[10..12]).
type ElectionKeys struct {
	FairKeys
	Changes string // the channel on which every change of leader or value is published
	// Values is the prefix of the candidates' value keys: Values + owner
	// id. A value key is per owner, as its place in line is: a wait of the
	// handle writes both, and the place names the hold id.
	Values string
}

// Candidacy is one attempt of a candidate to lead (see ElectionCampaign).
type Candidacy struct {
	ID    string // the hold id (see FairTakeArgs)
	Value string // what the candidate leads with
	Lease time.Duration
	// Patience is how long a refused candidate keeps its place in line,
	// and its value, without a further attempt; 0 never joins the line.
	Patience   time.Duration
	GrantLease time.Duration
	Sharded    bool
	Deadline   int64  // server time in milliseconds (see FairTake)
	Seq        uint64 // the attempt's number (see FairTakeArgs)
}

// ElectionCampaign runs fairlock_acquire.lua for a candidate of an
// election, as FairTake does with fencing: the fencing token of a first
// acquisition is the leader's term. A candidate that takes the lock stores
// its value with it; a refused one that joins the line (or keeps its
// place) stores its value for as long as its place in line lasts, where a
// release that grants it the lock finds it. A hash of another lock under
// the name is WRONGTYPE, and so is an election's hash to a fair lock.
// Every change of leader is published on k.Changes.
func ElectionCampaign(ctx context.Context, c Processor, k ElectionKeys, a Candidacy) AcquireCmd {
	owner := OwnerOf(a.ID)
	keys := append(append(k.line(), k.Fence, k.Places+owner, k.Values+owner), k.Others...)
	return AcquireCmd{fairAcquire.run(ctx, c, keys, a.ID, ms(a.Lease), flag(true), patienceMs(a.Patience),
		k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, a.Deadline, k.Changes, a.Value, k.Values, a.Seq)}
}

// ElectionResign runs fairlock_unlock.lua for an election's leader, as
// FairUnlock does: a release that grants the lock moves the grantee's
// value into the hash, and every change of leader is published on
// k.Changes. An id is never reused: a late copy of a resignation never
// ends the owner's next leadership.
func ElectionResign(ctx context.Context, c Processor, k ElectionKeys, a ReleaseArgs) UnlockCmd {
	return UnlockCmd{fairUnlock.run(ctx, c, append(k.line(), k.Fence), a.ID, ms(a.Lease), k.Waiter, flag(a.Sharded), ms(a.GrantLease), k.Places, k.Changes, k.Values)}
}

// ElectionLeave runs fairlock_leave.lua for a candidate that gives up, as
// FairLeave does, deleting its value with its place.
func ElectionLeave(ctx context.Context, c Processor, k ElectionKeys, id string, sharded bool) IntCmd {
	owner := OwnerOf(id)
	return IntCmd{fairLeave.run(ctx, c, append(k.line(), k.Places+owner, k.Values+owner), id, k.Waiter, flag(sharded))}
}

// ElectionForceUnlock runs fairlock_forceunlock.lua on an election's
// leadership, as FairForceUnlock does, publishing a deletion on k.Changes.
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

// ElectionProclaim runs election_proclaim.lua: set the value of the
// leadership held by hold id to value, if it leads in term and no proclaim
// of its owner numbered above seq has run, and publish the change on
// k.Changes. The reply is one of the Proclaim outcomes. A second run of
// the same call changes nothing and reports ProclaimDone, so go-redis may
// resend it.
func ElectionProclaim(ctx context.Context, c redis.Scripter, k ElectionKeys, id string, term, seq uint64, value string, sharded bool) IntCmd {
	return IntCmd{electionProclaim.queue(ctx, c, []string{k.Lock}, id, strconv.FormatUint(term, 10), seq, value, k.Changes, flag(sharded))}
}
