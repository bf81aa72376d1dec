// Package hold is the hold engine behind every redisync lock: one place
// for what a hold is and how it begins, lives and ends, so that a lock
// package only describes itself (its keys, scripts, channels, options and
// docs) in a Kind, and a new lock kind is its Lua and a short file.
//
// The pieces, outermost first:
//
//   - Lock serves a lock handle's exported methods from a Kind: the wait
//     loop (wait.Wait), leaving what a failed wait left in Redis,
//     ForceUnlock under a receipt, the read-only queries, Do.
//   - Tracker is a handle's hold: one record of it, whose holders say
//     which levels Redis has, the serialization of its state-changing
//     scripts that keeps that view true to Redis, Done, the watchdog
//     entry, the contexts of Do, the loss hook. A leased semaphore keeps one Tracker per permit id.
//   - Take is one acquisition attempt under the rules every primitive
//     shares: an unknown outcome is undone, a grant read after ctx ended
//     is given back (the caller moved on), a grant older than its
//     validity is given back and retried. A give-back that fails is
//     owed, and sent again before the handle's next attempt or release
//     (Tracker.Undo).
//   - Release and ReleaseUntracked resend a release whose reply was lost,
//     reading a retry's "not held" right: at the last level, a run that
//     went through unseen leaves nothing to compare with.
//
// Hold ids. Redis records each hold under an id of its own, "<owner
// id>:<n>" (the handle's owner id, which names the holding host and pid,
// and a number of the handle's), made for the wait that takes it and
// never used again once anything names it in a release, a give-back or a
// leave (Tracker.waitID, retire). So an acquire that finds its id in
// Redis is a resend of that very wait's attempt, or a grant to it; a
// release, give-back or leave that Redis runs late (sent before a stall,
// run after it) finds its id gone, or a hold that is still its own, and
// never touches a later hold of the handle; and a hold the handle gave
// up (lost, a failed release, a wait that ended) is never taken back:
// its release is owed by id, and the handle's next hold waits behind it
// like any other owner's. Re-entry depth and a read-write lock's readers
// live in the process (the hold's holders, behind the local line:
// Lock.take); Redis keeps one level per hold and mode.
// A read-write lock's downgrade takes its read level under the current
// hold's id; a read of another goroutine while the hold has its read
// level joins it in the process, on the handle's op (see intent), and the
// last reader's release lets the level go. A hold's read level can be
// taken again after its release (a downgrade, released, then taken again
// under the write hold), so each read level is tagged in Redis with the
// number of the attempt that took it (Asking.Seq, never reused by the
// handle), and its release, owed release and give-backs name the tag: a
// copy of the first release that Redis runs late finds the second level
// under another tag and changes nothing, and an attempt under the current
// hold's id (a downgrade) whose outcome is unknown can be given back a
// second time, once no copy of it can run (see Tracker.Attempt), as one
// under a wait's id is.
//
// One record of a hold. The Tracker keeps a hold's Redis side and its
// holders in the process in one record, under one mutex (Tracker.mu, taken
// after op): the hold is live exactly while it is the Tracker's current
// hold, and whether Redis has its level of a mode is derived from who holds
// it (the write record, the handed mark, the reads, or a release in
// flight), never counted apart; a level nobody holds any more is owed by
// id, once. A take records its level in the critical section that applies
// the reply, carried down as a parameter (intent), never a ctx value; a
// release counts its holder out on op, sends the level's release with
// its last holder, and records the outcome (Tracker.leave, finish).
//
// Invariants: a script that takes, gives back or decides once is never
// resent by go-redis (package script); the engine's resends carry what
// the caller believes (a hold id, a receipt), so that a resend
// changes nothing the first run did. Undo and cleanup run without the
// caller's cancellation, bounded by CleanupTimeout, and the caller waits
// for them only until its ctx ends: then they finish in the background
// (perclient.TidyUp), and the handle's next script waits for them first. rlock and fairlock
// hold in one mode (Exclusive); a read-write lock holds in both, and one
// hold spans both modes: it begins with the first level taken in either
// and ends when the handle holds nothing.
//
// # Grants: the one-hop handoff
//
// A mutex (rlock, fairlock) hands itself over: the release that frees it
// makes the first live waiter in line the holder, in the same script, and
// tells that waiter so. The waiter's process then completes the hold
// without another acquire script. What each party does:
//
//   - Waiting. Every blocking waiter of a mutex has a place in a line in
//     Redis: its owner id in a list in arrival order, and a key of its
//     own that expires when the waiter's process stops refreshing it
//     (the grant lease, so that the waiters that died with a grantee
//     have lapsed when its grant does; fairlock's is shorter when the
//     waiter's timeout is) and names the hold id it waits with; a
//     fairlock waiter also has
//     its waiter timeout as a score in a zset (server time), which decides
//     membership. The acquire script of a refused blocking attempt joins
//     the line, or refreshes the waiter's place if it is there already.
//     A parked waiter does not attempt to keep its place (Kind.Place):
//     its client's keeper (perclient.Client.Keep) refreshes every parked
//     waiter's place once a second, all in one pipeline (a GETEX each,
//     a PTTL for each lock they wait on, and for rlock the line's
//     PEXPIRE), and wakes a waiter to attempt
//     when its place is gone or its lock free; its last refresh that
//     found the place holding the last refused attempt's id stands for
//     that attempt when a grant is completed (see Tracker.claim): a grant takes
//     the place, and nothing writes that id again (acquire scripts are
//     never resent, and a script of an earlier attempt run late writes
//     its own). 10000 parked waiters cost about 13000 Redis
//     commands and 11 round trips a second that way, against 39000 and
//     7700 when each attempted every second (bench module, waiters
//     scenario). A fairlock waiter still attempts every third of its
//     waiter timeout, which keeps its deadline in the zset. An rwlock
//     waiter has no line but an announcement, a member of a zset scored
//     with when it lapses (server time); the keeper keeps that too (a
//     ZADD XX GT each, scored on the server's clock as the keeper last
//     read it, and a PEXPIRE GT for each zset), and wait.WaitKept
//     parks the waiter without a grant to claim.
//     Once subscribed after its first refused attempt, a waiter does not
//     attempt again but checks with one command (HKEYS) whether the
//     lock is still another's; it attempts when a release granted it the
//     lock in between, or the lock is free (wait.WaitGranted).
//   - Releasing. The release of the last level pops waiters off the line
//     until one whose place has not lapsed (the others' processes died or
//     lost Redis: they are dropped), makes it the
//     holder with one level and the grant lease (GrantLease, 3s; a
//     fairlock waiter's timeout if shorter, which its place names:
//     Kind.GrantLease), takes
//     the next fencing token if the waiter uses fencing, and publishes
//     "h<token>:<hold id>" on that waiter's own channel. Every other path
//     that finds the lock free with a waiter in line (an attempt after a
//     holder's lease ran out, a waiter leaving, a renewal, ForceUnlock)
//     grants the same way (fairlock), or lets the attempt take it
//     (rlock). A grant goes only to a waiter whose place has not lapsed,
//     and a grantee that died holds the lock for at most its grant
//     lease. Then whoever attempts first takes the lock (rlock), or the
//     first live waiter in line does (fairlock: an attempt of anyone
//     else grants it to that waiter); each client's keeper, having seen
//     the grant's lease about to run out, wakes its waiters just after.
//   - Completing. The hub marks a subscription granted when an "h" message
//     reaches it on a confirmed subscription (a message read before the
//     confirmation belongs to an earlier subscription of the channel, a
//     wait that has ended: it only wakes). The woken waiter hands the
//     grant to Tracker.claim, which makes it a hold (levels, Done, the
//     fencing token, a watchdog entry) without a round trip. Its validity
//     is counted from when the waiter's last refused attempt was sent:
//     that script ran before the grant, so the server's grant lease ends
//     no earlier than that moment plus the waiter's grant lease. Until
//     its first renewal the hold is valid for the shorter of the grant
//     lease and its own lease from that moment (a renewal sets the hold's own lease on
//     the server, and one whose reply is lost must not leave the local
//     validity beyond it); then the watchdog's lease applies. A grant that arrives when that validity is nearly
//     over, or to a handle with a fixed lease (WithLeaseTime: the lease
//     must be its own, not the grant's), is completed by one acquire
//     attempt instead: the script finds the owner holding one level it
//     does not know of, reports it as held, and sets the full lease.
//   - A lost grant message. The grant is in Redis whether or not its
//     message arrives. A pub/sub reconnect wakes every waiter (hub), and
//     any attempt of the waiter, woken or at the end of its bounded sleep,
//     finds the owner holding the lock and completes as above.
//   - ctx. A waiter whose ctx ends returns ctx's error, and gives back a
//     grant that reached it: one whose message it read with the end of
//     ctx or after (Tracker.claim, as Take gives back a grant read after ctx
//     ended), and one its Leave finds in Redis. The release script
//     releases the level, which grants the lock to the next waiter. Leave
//     itself only reports the grant; the engine gives it back by the
//     wait's id, which the wait retired as it ended: nothing of a later
//     Lock of the handle is under it, however late either runs. A grant
//     nobody gives back (the waiter's process died) lapses with its
//     grant lease; a grant message to an id the handle gave up, read
//     late, is given back the same way.
//   - Exactly once. A release names its hold id: a resend of a release
//     that granted finds the id gone (NotHeld, read by Release as its
//     own success), and neither touches the grantee's field nor grants
//     again, since the lock is held.
//
// Fairness. fairlock is strict: a newcomer never takes a free lock while
// a live waiter is in line (TryLock reports false), and the lock is never
// left free while one is. rlock lets a newcomer take a lock it finds
// free, as Redisson's RLock does, but a release never leaves it free
// while a live waiter is in line: it grants to the first. So a parked
// rlock waiter is served in arrival order among the parked ones, and a
// newcomer wins only when nobody is parked or in the short window after a
// holder's lease ran out. Goroutines sharing a handle wait in the
// process's local line behind the one that holds the handle's place.
//
// In-process handoff. When the grantee is a handle of the releasing
// process on the same client, the release's reply names it and its token
// (Config.Granted), and the hub hands the grant to its wait at once
// (hub.Hub.Deliver), without waiting for the pub/sub message. The message
// has an ordering guarantee that the reply lacks (it is read before the
// confirmation of any later subscription of the channel): delivered late,
// a reply could reach a later wait of the same handle. So the delivery
// carries the release's send time and is accepted only by a wait whose
// last attempt, refused without error, was sent before it: a later wait
// sends all its attempts after the grant was made, hence after the
// release was sent.
//
// Local handoff (Kind.LocalHandoff, rlock). Goroutines sharing one handle
// share its owner id, so a hold can pass between them without Redis: an
// Unlock of the last level with another call waiting on the handle's
// local line leaves the hold in Redis and marks it handed, and the next
// call through the line takes it (see Lock.handOver). That passes over
// the waiters of other processes, so it is bounded: at most maxPasses (7)
// times in a row, and after the first only within maxPassTime (10ms) of
// the hold's start in Redis; then the release goes to Redis, which grants
// the lock to the first waiter in the Redis line. A fair lock never does it, nor a hold that needs something of
// its own from Redis (a fencing token, a fixed lease, replica
// acknowledgements).
//
// One decider. Between handles and processes, the release in Redis alone
// decides who holds next: it grants the lock to the first live waiter in
// the Redis line, whichever process or handle that is, and a grantee of
// the releasing process hears of it from the release's reply (above). A
// cross-handle transfer inside the process, which passed the lock to a
// parked waiter of another handle before the script ran, was measured
// against this in the bench module's workers scenario (16 workers over 4
// clients, a handle per worker), both ways in one run: 71.1% against
// 69.3% of the serial limit, and 63% against 72% in another run, under
// the 5 points that would have paid for a second decider (issue 41). It
// is gone, and with it the pass-over of the process's own waiters.
//
// Not granted: rwlock and the semaphores. A read-write lock's release
// to readers admits all of them at once, and its writers announce
// themselves without a line; a grant would need a line of writers and
// readers with modes. Semaphore waiters need n permits each and the
// counting semaphore has no owners to grant to. Both keep the wake-up
// and retry of wait.Wait.
package hold
