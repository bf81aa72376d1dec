// Package fairlock implements a fair (first come, first served) reentrant
// distributed mutex on Redis.
//
// A fairlock.Mutex has the method set and options of rlock.Mutex. The
// difference is the order in which waiters get the lock: rlock wakes one
// waiter per process and lets them race, fairlock keeps a line across all
// processes and hands the lock to the waiter first in line, and to nobody
// else, not even a TryLock that happens to come by while the lock is free.
//
// # Data layout
//
// A lock called name is the Redis hash redisync:{name} (field: the
// holder's owner id, value: its hold count; field "@<owner id>": the
// number of its latest attempt that took or re-entered the hold, as in
// package rlock; with a PEXPIRE lease), the
// waiter list redisync:{name}:queue (owner ids, oldest first) and the zset
// redisync:{name}:timeouts (owner id, scored by the Redis server time in
// milliseconds after which that waiter counts as dead). Each waiter keeps
// a place of its own, the string redisync:{name}:place:<owner id>, which
// expires the waiter's grant lease (3s, or its waiter timeout if shorter)
// after its last attempt or refresh (its liveness when the lock passes to
// it; its value names that attempt and that lease), and listens on a
// channel of its own, redisync:{name}:chan:<owner id>. With
// [WithFencing], the hold's fencing token is the hash's field "@token",
// and the string redisync:{name}:fence keeps the name's last token for one
// lease after it was taken (see Fencing tokens). Everything shares the
// hash tag {name}, so on a Redis Cluster each lock lives in one slot.
// Every state change is one Lua script (see package lua), and every
// script first drops the waiters whose deadline has passed. When the lock is released and nobody waits, no key
// is left but the fencing counter, which expires by itself.
//
// # Ownership
//
// Ownership is rlock's: a handle is shared like a [sync.Mutex], goroutines
// waiting on one handle wait in line in the process in arrival order (only
// the first of them holds a place in the Redis line), and re-entry travels
// in ctx: [Mutex.Lock], [Mutex.TryLock] and [Mutex.Do] with the ctx Do hands
// fn go one level deeper ([Mutex.HoldCount] reports the depth),
// [Mutex.Unlock] with it leaves one. A Lock with a ctx that carries no hold
// waits, while the handle holds, as a second sync.Mutex.Lock would; when
// its ctx ends with the handle still holding, its error (wrapping
// ctx.Err()) says that this handle holds the lock and that re-entry goes
// through the ctx Do passes to fn.
//
// # Waiting in line
//
// Lock takes the lock if it is free and nobody waits; otherwise it joins
// the end of the line, subscribes to its own channel (one pub/sub
// connection per Redis client, however many waiters), tries again and
// sleeps. Unlock grants the lock to the first waiter in line that is
// live, in the same script, with a short grant lease (3s, or the
// waiter's timeout if shorter: the waiter's grant lease), and tells it on
// its channel: the waiter's process completes the hold without another
// script, and no herd of waiters races for the lock. Live means its place
// has not lapsed: it, or its client, refreshed it within its grant
// lease. A waiter silent for longer (its process died) is dropped from
// the line when the lock would pass to it, so dead waiters never hold the
// lock one grant lease after another. A grantee whose process died just
// before the grant keeps the lock only until its grant lease runs out;
// the lock is then free, and goes to the next live waiter in line: its
// client, having seen the grant's lease about to run out, wakes it just
// after, and its attempt takes the lock (an attempt by anyone else that
// comes first grants it the lock instead of taking it; waiters that died
// with the grantee have lapsed by then, and are dropped). In the fault
// suite, with WithWaiterTimeout(1s) and the lock released just after
// the head waiter's process was SIGKILLed, the waiter behind it held the
// lock 1.0s after the release (3.0s, the grant lease, when grants did not
// heed the waiter timeout); with two waiters SIGKILLed at the head and
// the default timeout, both live waiters behind them held it 3.0s after
// the kill. When the first waiter gives up while the lock is free, the
// next one is woken.
// docs/semantics.md in the repository tells the whole design. A re-entry
// (a Lock with the hold's ctx) never queues and is counted in the
// process: it sends one renewal, and when that finds the hold gone from
// Redis it fails with an error wrapping [ErrLost] and the hold ends as
// lost (as rlock's). The Unlock of an inner level sends nothing.
//
// A waiting Lock refreshes its deadline in line at least every third of
// [WithWaiterTimeout] ([DefaultWaiterTimeout], 10s), however long the
// holder keeps the lock, and its client refreshes the places of all its
// parked waiters once a second in one pipeline (the place, a key, is
// what a grant looks for), waking a waiter whose lock it finds free.
// A waiter that stops refreshing, because its process died or lost
// Redis, is dropped from the line once the timeout has passed since its
// last refresh, or earlier when the lock would pass to it after its grant
// lease of silence; it never blocks the waiters behind it for longer
// than its grant lease (3s, or the timeout if shorter).
// Deadlines are measured on the Redis server's clock, so clients with
// skewed clocks agree on them.
//
// A Lock whose ctx ends takes itself out of the line (if that call fails,
// the server drops the place at its deadline) and leaves no hold and no
// subscription behind; if ctx ends while an acquire script is in flight,
// Lock gives back whatever the script may have taken. Lock returns when
// ctx ends, also while Redis does not answer: leaving the line and the
// give-back finish in the background within a second, and the handle's
// next call waits for them.
// TryLock never joins the line, and reports false while anyone waits in it.
//
// A lost grant or wake-up costs at most a second: the waiter's next
// attempt finds the lock granted to it; after a pub/sub reconnect every
// waiter retries at once. A Lock that gives up after a grant reached it
// in Redis releases it, and the lock passes on.
//
// # Fencing tokens
//
// With [WithFencing], every first acquisition (one that takes the lock, or
// a release granting it to the head of the line) takes a new token, which
// [Mutex.Token] returns while the hold lasts, as in package rlock: the
// larger of the name's counter + 1 and the Redis server's clock (TIME) in
// microseconds, stored back as the counter, which lives one lease after
// the last token. Tokens strictly increase across all handles and
// processes, and keep increasing when the counter expired or Redis lost
// it (a restart without persistence, a failover to a replica that missed
// it), as long as the server's clock has not been set back by more than
// the time since the last token was taken (after a failover, the promoted
// replica's clock must not be behind the old primary's by more than that
// either). Each hold (each wait of Lock) has a hold id of its own, never
// reused: a hold the handle gave up as lost while it still stood in Redis
// is another holder to its next Lock, which waits for it and then takes a
// new token, as in rlock.
//
// # Leases, the watchdog and loss
//
// As in rlock: without [WithLeaseTime], a hold has the lease
// [WithWatchdogTimeout] (30s by default) and the client's shared watchdog
// renews it every third of that. When a renewal finds the lock gone or owned
// by someone else, or renewals keep failing until the lease has run out, the
// hold is lost: [Mutex.Done] closes and the [WithOnLost] hook runs, with
// an error that names the new holder's process when the renewal found one.
// With WithLeaseTime the lock simply expires d after the last Lock; the first
// waiter then takes it when its bounded sleep ends.
//
// # Redis deployments
//
// Works with *redis.Client, *redis.FailoverClient (Sentinel) and
// *redis.ClusterClient. On a cluster, wake-ups use sharded pub/sub
// (SPUBLISH/SSUBSCRIBE), which needs Redis 7.0 or later.
//
// # Limits
//
// Fairness is the order in which waiters joined the line in Redis, not the
// order in which callers invoked Lock. A waiter that cannot reach Redis for
// longer than the waiter timeout loses its place and joins the end of the
// line again. A handle has one place in the Redis line: the goroutines
// waiting on it queue behind one another in the process. The lease limits of
// rlock apply unchanged: mutual exclusion holds only while the lease is
// valid and only on one primary that has not lost the write; use fencing
// tokens where that matters.
//
// fairlock has no WithReplicaAck (rlock has): acknowledging the grant alone
// would keep mutual exclusion across a failover but not the line, whose
// places and deadlines change with every attempt of every waiter; a
// promoted replica may have an older line and serve waiters out of order.
// Use rlock with WithReplicaAck where surviving a failover matters more
// than order.
//
// # Testing with miniredis
//
// The scripts run unchanged on miniredis. miniredis expires keys only when
// the test advances its clock with FastForward, and its TIME (which the
// scripts use for waiter deadlines) follows SetTime; a test that wants
// waiter deadlines to pass moves both. So does one of [WithFencing]: a
// token reads TIME, while the fencing counter expires by FastForward, and
// a test that fast-forwards past the counter's lifetime with the time
// standing still gets the last token again.
package fairlock
