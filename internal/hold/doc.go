// Package hold is the hold engine behind every redisync lock: what a hold
// is and how it begins, lives and ends. A lock package only describes
// itself (keys, scripts, channels, options) in a Kind, so a new lock kind
// is its Lua and a short file.
//
// Lock serves a handle's exported methods from a Kind: the wait loop,
// leaving what a failed wait left in Redis, ForceUnlock, the queries, Do.
// Tracker is a handle's hold: one record of its levels in Redis and its
// holders in the process, the serialization of its scripts (op), Done, the
// watchdog entry and the loss hook; a leased semaphore keeps one per permit
// id. Take is one attempt under the rules every primitive shares.
//
// Hold ids. Redis records each hold under an id of its own, "<owner
// id>:<n>", made for the wait that takes it and never used again once a
// release, a give-back or a leave names it (Tracker.waitID, retire). So an
// acquire that finds its id in Redis is a resend of that wait's attempt or
// a grant to it; a release, give-back or leave that Redis runs late (sent
// before a stall, run after it) finds its id gone or its own hold, never a
// later hold of the handle; and a hold the handle gave up is never taken
// back: its release is owed by id. Redis keeps one level per hold and mode;
// re-entry depth and a read-write lock's readers live in the process
// (owner.go). A read level is tagged with the attempt that took it
// (Asking.Seq) and released by that tag: a hold may take its read level
// again (a downgrade released, then taken again), and a late copy of the
// first release must not remove the second.
//
// One record. Tracker.mu, taken after op, guards a hold's Redis side and
// its holders together: whether Redis has a level is derived from who holds
// it, never counted apart (invariants I1..I6 at type hold). A take records
// its level in the critical section that applies the reply (intent).
//
// Every path keeps these rules: a script that takes, gives back or decides
// once is never resent by go-redis (package script); the engine's own
// resends carry what the caller believes (a hold id, a receipt), so they
// change nothing the first run did. Undo and cleanup run without the
// caller's cancellation, bounded by CleanupTimeout; the caller waits only
// until its ctx ends, the rest finishes in the background
// (perclient.TidyUp), and the handle's next script waits for it first.
//
// # The waiter
//
// A mutex (rlock, fairlock) is handed over in Redis: the release that frees
// it makes the first live waiter in line the holder in the same script, and
// the waiter's process completes the hold without another acquire.
//
//   - Its place. A refused blocking attempt joins the line (its owner id in
//     a list; fairlock also scores its waiter timeout in a zset) with a key
//     naming its hold id and attempt (placeValue), which lapses unless
//     refreshed. The client's keeper (perclient.Client.Keep) refreshes every
//     parked waiter's place once a second in one pipeline, and wakes a
//     waiter whose place is gone or lock free (10000 waiters: about 13000
//     commands and 11 round trips a second, against 39000 and 7700 when each
//     attempted; bench module). A fairlock waiter still attempts every third
//     of its timeout. Once subscribed, a waiter checks with one HKEYS
//     (recheck) and attempts only when granted or the lock is free. An
//     rwlock writer's place is an announcement in a zset, kept the same way.
//   - The grant. The release of the last level pops waiters until one whose
//     place has not lapsed, makes it the holder for the grant lease, takes a
//     fencing token if it fences, and publishes "h<token>:<hold id>" on its
//     own channel. Every other path that frees the lock with a waiter in
//     line grants the same way (fairlock) or lets an attempt take it
//     (rlock). A dead grantee holds the lock for its grant lease at most.
//   - The claim. The hub marks a subscription granted on an "h" message read
//     after its confirmation (one read before is an earlier subscription's:
//     it only wakes). A grant naming the wait's last refused attempt (id and
//     Seq) becomes a hold in Tracker.claim without a round trip, or through
//     an acquire attempt. A lost message loses nothing: the grant is in
//     Redis, a pub/sub reconnect wakes every waiter, and attempts find it.
//   - Giving up. A waiter whose ctx ends gives back a grant read with or
//     after that end (claim) and one its Leave finds, by the wait's retired
//     id. A grant nobody gives back lapses with its grant lease.
//   - Who is next. The release in Redis alone decides between processes.
//     fairlock never lets a newcomer take a free lock while a live waiter is
//     in line; rlock does (as Redisson's RLock), but its releases still
//     grant to the first live waiter. A grantee on the same client hears of
//     its grant from the release's reply (Config.Granted, hub.Hub.Deliver),
//     taken only by a wait whose last refused attempt was sent before the
//     release, so a reply read late never reaches a later wait. A second,
//     in-process decider did not pay (issue 41). Within a handle, an Unlock
//     may leave the hold to a goroutine at the local line (Lock.handOver).
//
// rwlock and the semaphores have no grants (readers are admitted at once, a
// semaphore waiter needs n permits): they keep wait.Waiter's wake-up and retry.
//
// # The release
//
// A release counts its holder out on op (Tracker.leave), whatever Redis
// will say, and only a level's last holder sends its release, naming the
// hold's id and the level's tag. In flight the level is the release's
// (hold.going), and a loss the watchdog reports meanwhile waits in
// lostWhile: a renewal run after the release finds the lock gone, and only
// the release's outcome says whether that was a loss (finish):
//
//   - released, or a resend's "not held" after a lost reply: done, and the
//     hold ends with its last level;
//   - "not held" otherwise: the hold was lost (ErrNotHeld);
//   - a reply lacking the hold's other level: lost unseen, nothing owed;
//   - an error: the release is owed by id, and the hold ends all the same
//     with its last level, so the watchdog stops renewing a lock its holder
//     wanted released.
//
// A release that cannot get op before ctx ends owes its level likewise
// (abandon). What is owed (a lost hold's levels, failed releases and
// give-backs) is sent oldest first before the next attempt or release
// (repay), and with each renewal in the background (repayBehind). Each
// level is owed once (I3), and ids are never reused, so an owed release is
// exact whenever it runs.
package hold
