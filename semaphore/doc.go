// Package semaphore implements distributed semaphores on Redis: a counting
// Semaphore, and a Leased semaphore whose permits have ids and leases, so
// that a crashed process cannot leak them.
//
// # Counting semaphore
//
// A Semaphore called name is one Redis string, redisync:{name}, holding the
// number of available permits. [Semaphore.Acquire] takes n permits at once,
// waiting until that many are available; [Semaphore.Release] adds n back.
// [Semaphore.TrySetPermits] sets the count only if it was never set,
// [Semaphore.SetPermits] sets it whatever it was, [Semaphore.AddPermits]
// adds or (negative) takes away permits and may leave the count below zero,
// and [Semaphore.Drain] takes every available permit. Acquiring or releasing
// 0 permits does nothing; a negative count is an error wrapping
// [ErrNegativeArgument] and changes nothing.
//
// Counts are limited to 2^53 - 1 (9007199254740991) in magnitude, the
// largest integers the scripts' numbers (Lua doubles) hold exactly, in
// both semaphores: a count or amount beyond it is an error wrapping
// [ErrOutOfRange] before any I/O, and a Release or AddPermits that would
// take the count (a Leased's total) past it is refused with one by the
// script, which changes nothing. (A give-back of permits an acquisition
// took is never refused, and may take the count past the bound when
// releases came in between; acquisitions stay exact then, and releases
// and Drain are refused until the count is back within it.)
//
// It follows Redisson's RSemaphore, and has its two sharp edges:
//
//   - Permits are not owned. Release adds permits whoever calls it, whether
//     or not it acquired them, and on a semaphore that was never set it
//     creates them: a Release without an Acquire raises the capacity. A
//     process that crashes while holding permits never gives them back: use
//     [Leased] when that matters. An operator sees the count with
//     "redisync inspect NAME" and repairs it with "redisync semaphore set
//     --force NAME N" (or add).
//   - Waiters are not served in arrival order. Whoever tries first after a
//     release gets the permits, so a waiter asking for many permits can be
//     overtaken again and again by waiters asking for few.
//
// Each acquisition also writes a receipt key,
// redisync:{name}:acquire:<request id>: the permits the request took, or
// that it was cancelled. It makes an acquisition exact when its outcome is
// unknown: a request repeated under the same receipt takes nothing twice,
// and an Acquire whose ctx ends, or whose reply is lost, while its request
// is in flight gives back exactly what that request took. A blocking
// Acquire goes on retrying its request under the receipt while Redis is
// out of reach, so the receipt is not trusted to expire after the last
// retry: the handle deletes it once it knows the outcome, along with its
// next script (no round trip of its own), and its lifetime of an hour is
// only a safety net. A request whose reply was lost keeps its receipt for
// that hour, since a copy of it may still reach Redis late. The limit: a
// single Acquire that cannot reach Redis for over an hour, with a ctx that
// lets it wait that long, may lose the permits its lost request took.
//
// Release and AddPermits write one too, redisync:{name}:release:<request
// id>, so that each call adds its permits at most once: when a reply is
// lost, the call itself retries it under the same receipt (go-redis does
// not resend it), and a retry of a request that went through adds nothing.
// Every request also carries a deadline on the server's clock, five
// seconds after it was sent: a copy that reaches Redis after it (held up
// in a stalled network) changes nothing at all, and a receipt lives ten
// seconds past it; the call never retries after the deadline: unlike
// Acquire's, its retries are bounded. Each attempt of an Acquire carries
// a deadline of its own, so that a copy of it run late cannot take
// permits its request no longer wants.
// That is all "idempotent" can mean for permits that are not owned: two
// calls are two releases, since nothing tells a second Release apart from
// a release of permits acquired elsewhere. A Release that fails on a
// network fault leaves unknown whether its permits were added.
//
// SetPermits and TrySetPermits (redisync:{name}:set:<request id>) and Drain
// (redisync:{name}:drain:<request id>, written only when it took permits)
// do the same: a retry after a lost reply reports what the first run did
// (TrySetPermits true, Drain the permits it took) and changes nothing, so
// it neither undoes acquisitions made in between nor drains permits
// released since.
//
// # Leased semaphore
//
// A Leased called name keeps its total number of permits in the string
// redisync:{name}:permits and its acquired permits in the sorted set
// redisync:{name}, member = permit id ("<host>:<pid>:<nonce><n>", naming the
// process that acquired it, as a lock's owner id does), score = the expiry of the
// permit's lease on the Redis server's clock. The available permits are the
// total minus the acquired ones; SetPermits and AddPermits change the total,
// acquired permits included, so Available may be negative after a
// reduction. Every operation first returns expired permits to the pool.
// TrySetPermits, SetPermits (redisync:{name}:set:<request id>) and
// AddPermits (redisync:{name}:add:<request id>) write receipts as the
// counting semaphore's do: each call changes the total at most once, and a
// retry after a lost reply reports what the first run did.
//
// [Leased.Acquire] returns the id of the permit it took. A permit acquired
// with a positive lease expires lease later unless [Leased.Renew] extends it
// or [Leased.Release] gives it back. With lease 0 the permit has the lease
// [WithWatchdogTimeout] (30s by default) and the client's shared watchdog
// renews it every third of that, batched with every other hold of the
// client, until Release: a process that crashes leaks such a permit for at
// most the watchdog timeout. When a renewal finds the permit gone, or
// renewals keep failing until its lease has run out, the watchdog gives it
// up: [Leased.Done] closes for its id, the [WithOnLost] hook runs, and its
// Release returns [ErrNotHeld]. The server may still have it (its clock
// running slow, or a renewal gone through unseen): the handle sends its
// release at once, and again before its next Acquire, TryAcquire, Release
// or Renew until it goes through. A Renew of the id through the handle
// takes the permit up again and cancels that release; a renewal through
// another handle or process does not, and the release frees the permit
// it renewed. Release of an id that holds no permit
// (unknown, expired or already released) returns an error wrapping
// ErrNotHeld and changes nothing; Renew of such an id reports false. A
// Release whose reply is lost is retried knowing that the first may have
// gone through, so it reports success, not ErrNotHeld; a Release that fails
// all the same stops the renewals of the permit, which then returns to the
// pool when its lease runs out. Permit ids are capabilities: any handle, in
// any process, may release or renew a permit whose id it knows.
//
// # Waiting
//
// A waiter makes one attempt; if it fails it subscribes to the channel
// redisync:{name}:chan (one pub/sub connection per Redis client, however
// many waiters), tries again and sleeps until a notification, a timer or
// ctx; a waiter that finds the channel already subscribed by other waiters
// of its client joins them first and needs one attempt. Every release of
// permits publishes how many are available, and each process wakes, in
// arrival order, the waiters whose requests fit in that many, not all of
// them: with 1 permit free, a waiter for 4 is passed over and the next
// waiter for 1 is woken. The timer is the safety net behind the
// notifications: a waiter never sleeps longer than [WithPollInterval]
// ([DefaultPollInterval], one second), nor, on a Leased, past the expiry of
// the earliest acquired permit. So a lost notification, or permits that
// another process took first, cost a waiter at most that interval.
//
// Unlike rlock and fairlock, a release does not hand permits to a waiter
// in its script (the one-hop handoff): waiters ask for different numbers
// of permits, and a counting Semaphore has no owners to give them to. A
// woken waiter tries again, one more round trip than a grant.
//
// An Acquire that fails leaves nothing behind: no permit taken and no
// subscription. If ctx ends while an acquire script is in flight, Acquire
// gives back whatever that script took; so it does when the reply of a
// successful take arrives after ctx ended, and returns the ctx error: the
// caller has moved on. Acquire returns when ctx ends, also while Redis
// does not answer: a give-back it cannot finish by then finishes in the
// background, within a second.
//
// # Redis deployments
//
// Works with *redis.Client, *redis.FailoverClient (Sentinel) and
// *redis.ClusterClient. Every key and channel of a semaphore shares the
// hash tag {name}, so it lives in one slot of a cluster; notifications use
// sharded pub/sub there (SPUBLISH/SSUBSCRIBE), which needs Redis 7.0 or
// later. A name already used by a key of another type, or by a string that
// is not a permit count, is an error wrapping [ErrWrongType], and the key is
// left untouched.
//
// # Limits
//
// Leases are measured on the Redis server's clock, so clients need no
// synchronized clocks; but a process paused longer than its lease (a GC
// pause, a stopped VM) can go on using a permit that has already been given
// to someone else. Replication is asynchronous: a failover can lose
// acquisitions and releases.
//
// # Testing with miniredis
//
// The scripts run unchanged on miniredis. Leases of a Leased are measured
// with the TIME command, which miniredis answers from the wall clock, or
// from the time a test set with SetTime: set it to make leases run out
// without waiting. FastForward does not move it.
package semaphore
