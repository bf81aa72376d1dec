// Package multilock holds several distributed locks as one: all of them
// (New, Redisson's MultiLock), or a majority of them (NewQuorum, the
// Redlock algorithm).
//
// # Data layout
//
// None of its own. A Group keeps nothing in Redis; its members are
// ordinary locks (rlock, fairlock, the write side of rwlock, or any other
// Locker) with their own keys, leases, watchdog and Done. What an
// operator sees with `redisync inspect` is the members.
//
// A group's Lock and TryLock report to the Observer (package observe) of
// the client of its first redisync member, as primitive "multilock"; each
// member reports its own acquires too.
//
// # All of them: New
//
// Lock takes the members one at a time in the order of their names, each
// waiting the way it waits on its own (an rlock sleeps on its release
// notifications, a fairlock in its line). Because every group in every
// process takes shared members in that same order, two groups over
// overlapping sets, such as transfer(a, b) and transfer(b, a), never
// deadlock: whichever takes the first shared member gets the rest. The
// members may live in different slots of a Redis Cluster, on different
// clients or servers. A Lock whose ctx ends, a TryLock that finds one
// member taken, and a member's error all give back what was taken before
// they return: nothing stays held. While a group waits for a later member
// it holds the earlier ones, as any ordered locking does; a member with a
// fixed lease shorter than that wait expires meanwhile, and Lock then
// gives everything back and starts again.
//
// Done closes when the group's hold ends: its final Unlock, or any
// member's hold ending (lost, lease run out, force-unlocked). Unlock
// releases every member in parallel and returns their errors joined.
//
// # A majority: NewQuorum
//
// NewQuorum is for the same name on N independent Redis servers (one
// handle per server, usually N = 3 or 5). Each round tries every member
// at once (TryLock); the group holds when more than N/2 of them granted
// within the round's budget, and gives back whatever it took otherwise.
// Lock repeats rounds until ctx ends: after a missed round it sleeps until
// a member is released on any server (rlock and rwlock members announce
// their releases over pub/sub, and the group listens without taking them
// or waiting in their line; an rlock announces only the releases of holds
// that refused a listening group, which marks them as it is refused) or a
// randomized delay around retryDelay (for
// a fairlock or another library's Locker, and as a backup). Done closes
// when fewer than a majority of the members remain held. A TryLock that
// missed a majority through contention returns false and no error; one
// that missed it because members failed returns their errors joined.
//
// # Validity
//
// A round counts only if the grant that made its majority arrived well
// inside the time its members' holds are sure to last. Its budget is the
// least over its members:
//
//   - a fixed lease L (rlock.WithLeaseTime, or a Leaser reporting a fixed
//     lease): more than half of L must be left after a drift margin of
//     L/100 + 2ms: majority reached in under L/2 - L/100 - 2ms; and when
//     the round ends, the shortest lease must still have time left;
//   - a watchdog of timeout T (the default of redisync's locks, T = 30s;
//     a Leaser reporting a renewed lease; 30s (redisync's default watchdog timeout) for a
//     Locker that says nothing): the majority must be reached before the
//     first renewal is due, in under T/3, so that no member granted early
//     in the round can expire before the group keeps it.
//
// The budget also bounds each member's attempt: a server that has not
// answered by then counts as failed, and the round goes on without it;
// the member gives back a grant that arrives later. With fixed leases the
// time left for the caller's work is the lease minus the round and the
// drift, not the lease: the group renews nothing itself.
//
// # Re-entry and sharing
//
// A Group is shared by goroutines as its members are: while one holds it
// another's Lock waits. A Lock with a ctx that carries members' holds
// (see rlock's Do) re-enters each as the member would; a Lock with a
// plain ctx on a group the caller already holds waits for itself, like a
// second sync.Mutex.Lock. Each Unlock leaves the innermost level.
//
// # What a quorum gives, and what it does not
//
// A majority of independent servers survives what one server cannot: a
// server that crashes, restarts empty or is cut off leaves the others'
// grants standing, so the lock outlives the loss of a minority without
// relying on replication (Redis replicates asynchronously, and a failover
// of a single primary can forget a lock it had granted). It does not
// survive everything:
//
//   - A server that restarts without its data (no persistence, or the
//     last writes not yet on disk) forgets its grant at once; with one
//     more restart in a 3-server quorum a second client can reach a
//     majority while the first still believes it holds. Restarted servers
//     should stay out for longer than the longest lease.
//   - Leases are measured by the servers' clocks. A clock that jumps
//     forward (an operator, a badly configured time daemon) expires a
//     grant early; two jumps in a 3-server quorum, as two restarts, end
//     mutual exclusion.
//   - A client that pauses (garbage collection, a swapped-out process, a
//     virtual machine stopped for migration, a long network delay on the
//     way to the resource) can outlive its lease and act on a lock it no
//     longer has. No lease lock, with one server or many, can prevent
//     that on its own: the holder cannot check the lock and act on the
//     resource in one indivisible step.
//
// The long-running debate about Redlock turns on the last point. One side
// holds that a lock meant for correctness (not only for saving duplicate
// work) must give the protected resource a way to refuse a stale holder:
// a fencing token, a number that grows with every grant and that the
// resource checks; and that Redlock, whose grants carry no such number
// and whose safety leans on bounded pauses, delays and clock drift, is
// then both heavier than needed for efficiency and not enough for
// correctness. The other side answers that the algorithm checks the time
// spent acquiring, that the same pauses break any lease-based lock, and
// that with monotonic clocks and sane operations its assumptions hold in
// practice. Both agree on what to do when correctness matters: have the
// resource check a fencing token, or use a consensus system built for it.
// redisync's rlock offers fencing (WithFencing) for a single server; a
// quorum of independent servers has no single counter to draw tokens
// from, so a Group has none. Use a quorum to make a lock survive the
// loss of a server; use fencing at the resource to make it safe against
// pauses.
package multilock
