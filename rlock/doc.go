// Package rlock implements a reentrant distributed mutex on Redis.
//
// # Data layout
//
// A lock called name is one Redis hash, redisync:{name}, with one field: the
// holder's owner id, whose value is its hold count, and a PEXPIRE lease.
// Waiters listen on the channel redisync:{name}:chan. With [WithFencing], the
// counter redisync:{name}:fence (which never expires) hands out fencing
// tokens. Every key and channel shares the hash tag {name}, so on a Redis
// Cluster each lock lives in one slot and its scripts never fail with
// CROSSSLOT. Every state change is one Lua script (see package lua).
//
// # Ownership
//
// A handle is shared the way a [sync.Mutex] is: while it holds the lock,
// every other [Mutex.Lock] waits, from another process, another handle, or
// another goroutine using the same handle. Goroutines waiting on one handle
// wait in line in the process (in arrival order) and only the first of them
// asks Redis, so sharing a handle adds no Redis traffic. A plain hold (taken
// by Lock with a ctx that carries no hold) is released by a plain
// [Mutex.Unlock] from any goroutine.
//
// Re-entry is explicit and travels in ctx: [Mutex.Do] runs fn with a ctx
// that carries the hold (and is cancelled when the hold is lost); Lock,
// [Mutex.TryLock] and Do called with that ctx, or one derived from it,
// re-enter (the hash's count goes up; [Mutex.HoldCount] reports the depth)
// and Unlock with it leaves one level. A call whose ctx carries no hold
// never re-enters by accident: it waits as a second sync.Mutex.Lock would. A
// hold that Do took belongs to fn's ctx: a plain Unlock during it returns
// [ErrNotHeld]. Each handle has a random owner id in Redis; one handle per
// name per process is the normal use. When the hold is lost ([Mutex.Done]
// closes) or force-unlocked ([Mutex.ForceUnlock]), the handle forgets it:
// the next Lock on it proceeds, and the late Unlock of the lost hold returns
// ErrNotHeld.
//
// # Waiting
//
// Lock makes one attempt; if the lock is held it subscribes to the lock's
// channel (one pub/sub connection per Redis client, however many waiters),
// tries again and sleeps until an unlock notification, the holder's
// remaining lease, or ctx. An unlock wakes one waiter per process. A lost
// notification costs at most the holder's remaining lease; after a pub/sub
// reconnect every waiter retries at once.
//
// Waiters of one process (one Redis client) wait in line: a Lock that finds
// others of its client already parked on the lock, with the holder's lease
// end known from their attempts, queues behind them without trying, and an
// unlock wakes the first in line. A Lock that joins an existing subscription
// tries once, not twice, and a woken waiter's retry runs one command when
// the lock is still held. Between processes there is no order: each unlock
// wakes the first in line of every process, and the fastest wins. A re-entry
// (a Lock with the hold's ctx) never queues. A Lock that fails leaves
// nothing behind: no hold, no subscription. If ctx ends while an acquire
// script is in flight, Lock gives back whatever the script may have taken
// before it returns.
//
// # Leases, the watchdog and loss
//
// Without [WithLeaseTime], a hold has the lease [WithWatchdogTimeout]
// ([DefaultWatchdogTimeout], 30s) and the client's shared watchdog renews it
// every third of that, batching the renewals of all holds of the client.
// When a renewal finds the lock gone or owned by someone else, or when
// renewals keep failing until the lease has run out, the hold is lost: Done
// closes and the [WithOnLost] hook runs (with an error wrapping [ErrLost]).
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
package rlock
