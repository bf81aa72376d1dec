// Package rlock implements a reentrant distributed mutex on Redis.
//
// # Data layout
//
// A lock called name is one Redis hash, redisync:{name}, with a PEXPIRE
// lease and two fields: the holder's owner id, whose value is its hold
// count, and "@" followed by the owner id, the number of the holder's
// latest attempt that took or re-entered the hold (a give-back of an
// earlier attempt, run late by a stalled Redis, leaves the hold alone).
// Waiters stand in line in the list redisync:{name}:queue (owner ids,
// oldest first); each keeps a place of its own, the string
// redisync:{name}:place:<owner id>, which expires [WaiterTimeout] (the
// grant lease, 3s) after its last attempt or refresh (its liveness; its
// value names its last attempt), and listens
// on a channel of its own, redisync:{name}:chan:<owner id>. With
// [WithFencing], the hold's fencing token is the hash's field "@token",
// and the string redisync:{name}:fence keeps the name's last token for one
// lease after it was taken (see Fencing tokens). Every key and channel
// shares the hash tag {name}, so on a Redis Cluster each lock lives in
// one slot and its scripts never fail with CROSSSLOT. Every state change is one Lua script
// (see package lua). When the lock is free and nobody waits, no key is
// left but the fencing counter, which expires by itself.
//
// # Ownership
//
// A handle is shared the way a [sync.Mutex] is: while it holds the lock,
// every other [Mutex.Lock] waits, from another process, another handle, or
// another goroutine using the same handle. Goroutines waiting on one handle
// wait in line in the process (in arrival order) and only the first of them
// asks Redis, so sharing a handle adds no Redis traffic. An Unlock with
// another goroutine waiting on the handle passes the hold to it without a
// round trip (the lock stays held in Redis), at most seven times in a row
// and, after the first, only within 10ms of taking it in Redis; then the
// release goes to Redis. Between handles, of one process or of several,
// the release in Redis decides who holds next: the first live waiter in
// the Redis line. Goroutines sharing one handle wait in the process and
// cost nothing of it. The handoff is not made with [WithFencing] (every
// hold takes a token of its own), [WithLeaseTime] or [WithReplicaAck]. A plain hold (taken
// by Lock with a ctx that carries no hold) is released by a plain
// [Mutex.Unlock] from any goroutine.
//
// Re-entry is explicit and travels in ctx: [Mutex.Do] runs fn with a ctx
// that carries the hold (and is cancelled when the hold is lost); Lock,
// [Mutex.TryLock] and Do called with that ctx, or one derived from it,
// re-enter ([Mutex.HoldCount] reports the depth) and Unlock with it
// leaves one level. The depth is counted in the process: Redis sees one
// hold, whatever its depth. A re-entry sends one renewal (which re-arms a
// [WithLeaseTime] lease and finds a hold gone from Redis), and the
// Unlock of an inner level sends nothing, so it cannot fail or leave a
// level behind. A call whose ctx carries no hold
// never re-enters by accident: it waits as a second sync.Mutex.Lock would,
// since a plain hold is anonymous and another goroutine's Lock must wait
// for it. Made from the goroutine that holds (m.Lock(ctx) twice, as a
// Redisson user might), that wait ends only with ctx; when it does, and
// the handle still holds, the error says so (rlock: lock "orders":
// context deadline exceeded: this handle holds the lock: …; to re-enter,
// lock with the ctx that Do passes to fn). It still wraps ctx.Err(); the
// wait is not cut short, as it may be another goroutine's. A
// hold that Do took belongs to fn's ctx: a plain Unlock during it returns
// [ErrNotHeld]. Each handle has an owner id of its own in Redis, which
// names its process next to a part that makes it unique:
// "<host>:<pid>:<nonce><n>" (the host name cut to letters, digits, '.',
// '-' and '_'; a random nonce drawn once per process and a count of the
// process's handles), so that redisync inspect
// and an operator's HGETALL show who holds the lock; one handle per
// name per process is the normal use. When the hold is lost ([Mutex.Done]
// closes) or force-unlocked ([Mutex.ForceUnlock]), the handle forgets it:
// the next Lock on it proceeds, and the late Unlock of the lost hold returns
// ErrNotHeld.
//
// # Waiting
//
// Lock makes one attempt; if the lock is held it joins the line in Redis
// with a liveness deadline (WaiterTimeout, 3s), subscribes to its own
// channel (one pub/sub connection per Redis client, however many
// waiters), tries again and sleeps. The release of the last level hands
// the lock over in the same script: it makes the first waiter in line
// whose deadline has not passed (or a waiter of the releasing process,
// see Ownership) the holder, with a short grant lease
// (3s), and tells it on its channel; the waiter's process completes the
// hold (lease, watchdog, Done, token) without another script. A grant
// whose message is lost is found by the waiter's next attempt: after a
// pub/sub reconnect every waiter tries at once. A parked waiter does not
// attempt to keep its place alive: its client refreshes the places of all
// its parked waiters once a second in one pipeline (a GETEX each, and a
// PTTL and the line's PEXPIRE for each lock they wait on), and wakes a waiter to attempt when
// its place is gone (a grant took it) or its lock is free (a grant or a
// lease ran out with nobody told). A waiter whose process died is dropped
// from the line 3s (WaiterTimeout, the grant lease) after its last
// refresh. If a release granted it the lock first, the lock is free again
// when the grant lease runs out, and by then the places of the waiters
// that died with it have lapsed too: however many dead waiters stand at
// the head of the line, the live ones behind them lose one grant lease at
// most. After a lapsed grant the lock is free, as after a lapsed lease:
// each client, having seen the grant's lease about to run out, looks at
// the lock just after and wakes its waiters on it, and whoever attempts
// first takes it (not necessarily the first live waiter in line: a waiter
// further back, or a newcomer, may go first); the others keep their
// places, and the next release grants the lock to the first of them that
// is live. In the fault suite, with two waiters SIGKILLed at the head of
// the line and the lock released at the kill, both live waiters behind
// them held it 3.0s after the kill, the second within a few milliseconds
// of the first's release. A release that leaves the lock free (nobody
// live in line) publishes on redisync:{name}:chan, which groups of locks
// (package multilock) listen to, when one of them asked for it: a group
// waiting on the lock marks the hold that refused it (the hash field
// '@watched', which lives and dies with the hold and passes to the next
// holder on a grant), and the release of an unmarked hold publishes
// nothing, which spares Redis a command on every uncontended Unlock.
// docs/semantics.md in the repository tells the whole design.
//
// Fairness: a Lock or TryLock that finds the lock free takes it, even
// when others are in line (as Redisson's RLock lets it), but a release
// never leaves the lock free while a live waiter is in line, so a parked
// waiter is never starved: releases serve the line in the order in which
// its waiters joined it, and a newcomer wins only when nobody is parked,
// or when the lock was freed another way (a holder's lease or a grant to
// a dead waiter ran out, ForceUnlock): then whoever attempts first takes
// it. Goroutines waiting on one
// handle wait in line in the process, behind the one that holds the
// handle's place. A re-entry (a Lock with the hold's ctx) never queues:
// when its renewal finds the hold gone from Redis it fails with an error
// wrapping [ErrLost], and the hold ends as lost (Done closes, the
// [WithOnLost] hook runs); a renewal that fails on a transient error is
// retried by a blocking re-entry until ctx ends (a TryLock returns it).
// An attempt whose reply comes too late to trust (after the validity its
// lease gives it) is given back. A Lock that fails
// leaves nothing behind: no hold, no place in line, no subscription; a
// grant that reached it as it gave up is released, which passes the lock
// on. If ctx ends while an acquire script is in flight, Lock gives back
// whatever the script may have taken. Lock returns when ctx ends, also
// while Redis does not answer: what it must still undo in Redis (a
// give-back, its place in line) finishes in the background within a
// second, and the handle's next call waits for it. With
// [WithLeaseTime] or [WithReplicaAck], a grant is completed by one acquire
// script instead, which sets the hold's own lease (and waits for the
// replicas).
//
// # Fencing tokens
//
// With [WithFencing], every first acquisition (a Lock or TryLock that
// takes the lock, or a release granting it to the handle) takes a new
// token, which [Mutex.Token] returns while the hold lasts: the larger of
// the name's counter + 1 and the Redis server's clock (TIME) in
// microseconds, stored back as the counter. Tokens therefore strictly
// increase across all handles and processes, and they keep increasing
// when the counter is gone, whether it expired (it lives one lease after
// the last token) or Redis lost it (a restart without persistence, a
// failover to a replica that missed it), on one condition: the server's
// clock has not been set back by more than the time since the last token
// was taken (after a failover, the promoted replica's clock must not be
// behind the old primary's by more than that either). Tokens are 16-digit
// numbers (below 2^53, so exact in a float64 too), and overtake a counter
// an earlier redisync release left. An acquisition retried after a lost
// reply reports the token the hold got, which the hold records in its
// hash. Each hold has an id of its own in Redis, never reused: a handle
// that gave its hold up as lost (Done closed, the watchdog could not renew
// in time) while the hold still stood in Redis, or whose Unlock failed,
// never takes it back. It releases it by its id before its next Lock,
// which takes a new hold with a new token: a step still under way under
// the hold given up carries the old token, which the resource refuses once
// the new one has reached it.
//
// # Leases, the watchdog and loss
//
// Without [WithLeaseTime], a hold has the lease [WithWatchdogTimeout]
// ([DefaultWatchdogTimeout], 30s) and the client's shared watchdog renews it
// every third of that, batching the renewals of all holds of the client.
// When a renewal finds the lock gone or owned by someone else, or when
// renewals keep failing until the lease has run out, the hold is lost: Done
// closes and the [WithOnLost] hook runs (with an error wrapping [ErrLost],
// which names the new holder's process when the renewal found one:
// "the lock was taken over: it is held by pid 4121 on web-3 (owner id …)").
// Validity is timed locally from when the last successful renewal was sent,
// minus a drift margin, so a holder cut off from Redis learns of the loss
// before Redis can give the lock to someone else. With WithLeaseTime the
// lock simply expires d after the last Lock; Done closes then, but a
// ForceUnlock is not noticed until then. When the handle holds nothing, no
// goroutine of the library is running for it.
//
// # Redis deployments
//
// Works with *redis.Client, *redis.FailoverClient (Sentinel) and
// *redis.ClusterClient. On a cluster, notifications use sharded pub/sub
// (SPUBLISH/SSUBSCRIBE), which needs Redis 7.0 or later.
//
// # Limits
//
// A lease lock gives mutual exclusion only while the lease is valid, and
// only on one primary that has not lost the write. Replication is
// asynchronous: a failover can lose a lock. A paused process (GC, a stopped
// VM) can outlive its lease without noticing until it runs again. Where that
// matters, use fencing tokens ([WithFencing], [Mutex.Token]) and have the
// protected resource reject stale ones. [WithReplicaAck] makes an
// acquisition wait until replicas have it, which narrows the failover window
// without closing it (renewals and releases are not acknowledged).
//
// # Testing with miniredis
//
// The scripts run unchanged on miniredis, so tests of code using rlock can
// run without a server. miniredis expires keys only when the test advances
// its clock (FastForward), so leases never run out by themselves there.
// With [WithFencing], a token reads miniredis's TIME, which follows
// SetTime (the real clock if the test never set it), while the fencing
// counter expires by FastForward: a test that sets the time and then
// fast-forwards past the counter's lifetime gets the last token again,
// unless it moves the time forward too.
package rlock
