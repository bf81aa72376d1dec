package script

import (
	"context"

	"github.com/redis/go-redis/v9"
)

var (
	semaphoreAcquire    = load("semaphore_acquire.lua")
	semaphoreRelease    = load("semaphore_release.lua")
	semaphoreSetPermits = load("semaphore_setpermits.lua")
	semaphoreDrain      = load("semaphore_drain.lua")
	semaphoreUndo       = load("semaphore_undo.lua")
)

// SemaphoreKeys names the keys and channel of one counting semaphore.
type SemaphoreKeys struct {
	Permits string // the permit count
	Channel string // the notification channel
	// Others are the keys other kinds of primitive keep under the name
	// (keyspace.Names.Others): SetPermits and Release do not create a
	// count while one of them exists (WRONGTYPE). None: no check.
	Others []string
}

// Taken is the outcome of a counting semaphore acquire attempt.
type Taken struct {
	OK        bool  // the request holds its permits
	Cancelled bool  // the request was cancelled by SemaphoreUndo: it takes nothing
	Available int64 // the permits left available (may be negative)
	Unset     bool  // refused: the semaphore has no permit count at all
}

// TakenCmd is the reply of SemaphoreAcquire.
type TakenCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c TakenCmd) Result() (Taken, error) {
	v, err := ints(c.cmd)
	if err != nil {
		return Taken{}, err
	}
	if len(v) < 2 {
		return Taken{}, errShortReply
	}
	return Taken{OK: v[0] == 1, Cancelled: v[0] == -1, Available: v[1], Unset: len(v) > 2 && v[0] == 0}, nil
}

// Settled receipts: every counting semaphore script but the count's read
// also takes settled, the receipt keys of earlier acquire requests whose
// outcome their handle knows, and deletes them (up to a few per script,
// in the semaphore's slot). So an acquire receipt is deleted as soon as
// it is no longer needed, without a round trip of its own.

// SemaphoreAcquire runs semaphore_acquire.lua: take n permits (n >= 1) if
// that many are available, recording it under receipt, a key of the
// request's own that lives for ttl. A repeated request with the same
// receipt takes nothing more; a cancelled one (see SemaphoreUndo) takes
// nothing at all and reports Cancelled. go-redis never resends it: a
// resend after the receipt expired would take the permits twice, so a
// lost reply comes back as an error and the caller cancels the request
// (SemaphoreUndo).
func SemaphoreAcquire(ctx context.Context, c Processor, k SemaphoreKeys, r Request, n int64, settled []string) TakenCmd {
	return TakenCmd{semaphoreAcquire.run(ctx, c, plusSettled(settled, k.Permits, r.Receipt), n, ms(r.TTL), r.Deadline)}
}

// SemaphoreRelease runs semaphore_release.lua: add delta permits (non-zero;
// negative takes them away) once for the request whose receipt key, which
// lives for ttl, is receipt, and, when delta is positive and permits are
// available afterwards, notify as many waiters per process as are
// available. A repeated request with the same receipt adds nothing. The
// reply is the available count afterwards. go-redis never resends it: the
// caller retries a lost reply while the receipt lives (exactly.Once).
func SemaphoreRelease(ctx context.Context, c Processor, k SemaphoreKeys, r Request, delta int64, sharded bool, settled []string) IntCmd {
	keys := plusSettled(settled, append([]string{k.Permits, k.Channel, r.Receipt}, k.Others...)...)
	return IntCmd{semaphoreRelease.run(ctx, c, keys, delta, flag(sharded), ms(r.TTL), r.Deadline, len(k.Others))}
}

// SemaphoreSetPermits runs semaphore_setpermits.lua: set the permit count to
// n (>= 0), or with onlyNew only if there is no count yet, notifying
// waiters when it grew, once for the request whose receipt key, which
// lives for ttl, is receipt: a repeated request reports success and
// changes nothing. The reply is false when onlyNew found a count (nothing
// changed). go-redis never resends it, as SemaphoreRelease.
func SemaphoreSetPermits(ctx context.Context, c Processor, k SemaphoreKeys, r Request, n int64, onlyNew, sharded bool, settled []string) BoolCmd {
	keys := plusSettled(settled, append([]string{k.Permits, k.Channel, r.Receipt}, k.Others...)...)
	return BoolCmd{semaphoreSetPermits.run(ctx, c, keys, n, flag(onlyNew), flag(sharded), ms(r.TTL), r.Deadline, len(k.Others))}
}

// SemaphoreDrain runs semaphore_drain.lua: take every available permit,
// once for the request whose receipt key, which lives for ttl, is receipt.
// The reply is how many the request took (a repeated request reports what
// the first took); 0 (nothing changed) when none was available. go-redis
// never resends it, as SemaphoreRelease.
func SemaphoreDrain(ctx context.Context, c Processor, k SemaphoreKeys, r Request, settled []string) IntCmd {
	return IntCmd{semaphoreDrain.run(ctx, c, plusSettled(settled, k.Permits, r.Receipt), ms(r.TTL), r.Deadline)}
}

// SemaphoreUndo runs semaphore_undo.lua: cancel the acquire request recorded
// under receipt, giving back the permits it took, if any, and making sure
// it takes nothing should it still arrive. ttl is the receipt lifetime the
// request used. The reply is the number of permits given back.
func SemaphoreUndo(ctx context.Context, c Processor, k SemaphoreKeys, r Request, sharded bool, settled []string) IntCmd {
	return IntCmd{semaphoreUndo.run(ctx, c, plusSettled(settled, k.Permits, r.Receipt, k.Channel), ms(r.TTL), flag(sharded), r.Deadline)}
}

// plusSettled returns a script's own keys followed by the settled receipts.
func plusSettled(settled []string, own ...string) []string {
	return append(own, settled...)
}
