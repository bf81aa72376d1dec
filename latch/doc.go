// Package latch implements a distributed count-down latch on Redis.
//
// A coordinator gives the latch a count, say the number of jobs of a
// batch; whoever finishes a job, in any process, calls CountDown; and
// Wait returns, in every process that waits, once the count has reached
// zero:
//
//	l := latch.New(rdb, "nightly-import")
//	ok, err := l.TrySetCount(ctx, 3)  // before the jobs start; only at zero
//	err = l.CountDown(ctx)            // by each of the three jobs
//	err = l.Wait(ctx)                 // nil once the count is zero
//
// It follows Redisson's RCountDownLatch. TrySetCount sets the count only
// while the latch is at zero, so a batch cannot be restarted under the
// feet of its waiters; CountDown on a latch at zero does nothing; Delete
// drops the latch whatever its count, and its waiters return as if it had
// reached zero. A count that is not above zero is an error wrapping
// ErrNonPositiveCount, and one above 2^53 - 1 (9007199254740991), more than the
// scripts' numbers (Lua doubles) hold exactly, an error wrapping
// ErrOutOfRange; neither changes anything.
//
// # Ordering: set the count before the jobs start
//
// A latch at zero does not exist, so it cannot tell "not set yet" from
// "done". Two pitfalls follow, Redisson's too:
//
//   - Wait on a latch nobody has set returns nil at once: a coordinator
//     that waits before the count is set is told that a batch that never
//     started is done.
//   - CountDown on a latch at zero succeeds and does nothing: a job that
//     finishes before the count is set is lost without an error, and the
//     waiters then wait for a count-down that already happened, until
//     their ctx ends.
//
// So the count comes first: call TrySetCount before any job of the batch
// can start, and start the jobs (and the waits) only once it reported
// true. When it reports false, the latch still counts an earlier batch,
// running or abandoned (redisync inspect shows its count): wait for it,
// or Delete it. Count reports the count (0 when not set), but a check
// then a CountDown are two calls and another process may act between
// them: only the order above makes every count-down count. Batches that
// may overlap need a name each (the batch id).
//
// # Data layout
//
// A latch called name is one Redis string, redisync:{name}:latch, holding
// its count, a positive integer. A latch at zero does not exist in Redis:
// the step to zero and Delete remove the key, so a finished batch leaves
// no count behind. The key is the latch's own (not the name's main key,
// redisync:{name}, which a lock or semaphore of the same name uses), so a
// latch never mistakes a semaphore's permit count for its own count; the
// latch key holding anything other than a positive count (another type,
// or a string that is not one) is an error wrapping ErrWrongType, and is
// left untouched.
//
// The step to zero and Delete publish one message, "-1", on the channel
// redisync:{name}:latch:chan; it wakes every waiter of every process at
// once. A CountDown that leaves the count above zero publishes nothing
// and wakes nobody.
//
// CountDown, TrySetCount and Delete each write a receipt key,
// redisync:{name}:latch:countdown:<request id> (and :latch:set:,
// :latch:delete:), with the outcome of their first run, even one that
// changed nothing (a CountDown at zero, a TrySetCount that found a
// count, a Delete of nothing): when a reply is lost, the call itself
// resends its request under the same receipt (go-redis does not resend
// it), and a resend changes nothing and reports what the first run did:
// CountDown counts down once, TrySetCount reports what it found, Delete
// reports the deletion. Every request also carries a deadline on the
// server's clock, five seconds after it was sent: a copy that reaches
// Redis after it (held up in a stalled network) changes nothing at all,
// and a receipt lives ten seconds past it. So a few receipt keys may
// outlive the count by up to fifteen seconds; they expire by themselves.
//
// # Waiting
//
// Wait reads the count; if it is not zero, it subscribes to the latch's
// channel (one pub/sub connection per Redis client, however many
// waiters and latches), reads it again, so that a step to zero between
// the two reads is not missed, and sleeps until the message, a timer or
// ctx. The timer is the safety net behind the message, since no lease
// bounds the wait: a waiter never sleeps longer than WithPollInterval
// (DefaultPollInterval, one second) before it reads the count again. So a
// lost message, or a latch zeroed without one (its key deleted by hand,
// or lost with a Redis restart), costs a waiter at most that interval.
// After the pub/sub connection broke and came back, every waiter reads
// the count at once.
//
// # Expiry of an abandoned latch
//
// The count never expires. A latch whose jobs died before counting down
// stays set, and its waiters wait until their ctx ends: an expiry would
// instead release them as though every job had finished, which is the
// wrong answer for a latch (the batch did not complete) and cannot be
// told apart from the right one. Bound each Wait with a ctx deadline, and
// remove an abandoned latch with Delete, or with DEL of its key
// (redisync inspect shows it).
//
// A waiter returns when it reads the count at zero. A latch set again at
// once after reaching zero (TrySetCount for the next batch) can therefore
// keep a waiter that had not read the count in between waiting for the
// new batch too: give each batch a name of its own (the batch id), or set
// the latch again only once its waiters have returned.
//
// # Redis deployments
//
// Works with *redis.Client, *redis.FailoverClient (Sentinel) and
// *redis.ClusterClient. Every key and the channel of a latch share the
// hash tag {name}, so they live in one slot of a cluster; the message
// uses sharded pub/sub there (SPUBLISH/SSUBSCRIBE), which needs Redis 7.0
// or later.
//
// # Limits
//
// Replication is asynchronous: a failover can lose count-downs, or a
// count, and a Redis restarted without persistence loses every latch, so
// its waiters return as though the count had reached zero. Use
// persistence (AOF) where that matters. A call resends a request whose
// reply was lost at most twice, and not after its deadline; one that
// fails all the same returns the error, and whether it counted down is
// then unknown. The deadlines assume the server's clock is not set back
// (as its key expiry does).
package latch
