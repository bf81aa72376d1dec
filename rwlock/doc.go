// Package rwlock implements a distributed reader/writer mutex on Redis.
//
// The lock is held by any number of readers or by one writer. Reads and
// writes are reentrant per handle, a writer may take read holds and keep
// them after its write Unlock (a downgrade), a waiting writer holds new
// readers back, so that a steady stream of readers cannot starve writers,
// and the readers that waited behind a write hold go before the next
// writer, so that a steady stream of writers cannot starve readers.
//
// # Data layout
//
// A lock called name is one Redis hash, redisync:{name}, with a field mode
// ("read" or "write") and one field per hold and mode: r:<hold id> is a
// hold's one read level, whatever the number of its handle's readers
// (counted in the process: the first takes the level, the others join it,
// the last one's RUnlock releases it), w:<hold id> is the writer's one
// write level. The read field's value is a tag, the number of the
// handle's attempt that took the level, which its release names: a hold
// may take its read level again (a downgrade, released, then taken
// again), and a copy of the first release that Redis runs late then
// finds another tag and leaves the second level alone.
// A hold id is the handle's owner id, ":" and a number of the handle's:
// each hold of a handle has its own, from its first level in either mode
// to the end of its last, and an id is never used again once its hold (or
// the wait for it) is given up, so that a release or give-back run late
// by a stalled Redis finds nothing of its id and leaves a later hold
// alone. With [WithFencing], a write hold's fencing token is the
// field @token, and the string redisync:{name}:fence keeps the name's last
// token for one lease after it was taken (see Fencing tokens). Every
// reading hold also has a timeout key, redisync:{name}:reader:<hold id>,
// whose expiry is its read lease. The hash expires with the longest lease
// of its holders: each acquisition or renewal pushes its expiry out to at
// least the new lease, and whenever a reader leaves the expiry is
// recomputed from the remaining readers' timeout keys, dropping readers
// whose lease has run out. So a crashed reader holds the lock only until
// its own lease ends, a reader leaving never cuts short the lease of one
// that stays, and after the last release no key of the lock remains but
// the fencing counter, which expires by itself.
//
// Waiting writers announce themselves in a sorted set,
// redisync:{name}:writers, and waiting readers in redisync:{name}:readers;
// the readers whose turn it is after a write release are in
// redisync:{name}:turn (see Writer preference). Readers wait on the
// channel redisync:{name}:chan and writers on redisync:{name}:wchan. Every
// key and channel shares the hash tag {name}, so on a Redis Cluster each
// lock lives in one slot. Every state change is one Lua script (see package
// lua); the scripts that must find other readers' timeout keys derive them
// from a prefix inside the same hash tag.
//
// # Ownership
//
// A handle is shared the way a [sync.RWMutex] is: goroutines sharing one
// handle each take a read hold of their own (they overlap), a write hold
// excludes every other goroutine and process, and in the process a waiting
// writer holds back later readers of the same handle. Re-entry travels in
// ctx: [RWMutex.Do] and [RWMutex.RDo] run fn with a ctx that carries the
// hold; [RWMutex.Lock] with a write hold's ctx re-enters it, [RWMutex.RLock]
// with a read hold's ctx re-enters that, and RLock or TryRLock with a write
// hold's ctx takes a read hold (a downgrade) that outlives the write hold as
// a plain read hold, released by a plain [RWMutex.RUnlock]. A re-entry is
// counted in the process (Redis sees one level of the hold in its mode,
// whatever its depth; the re-entry sends one renewal, and the unlock of an
// inner level sends nothing); a downgrade takes the hold's read level in
// Redis, or joins it. A
// reply is applied only to the hold it was sent for: a downgrade whose
// hold ended while its script ran gives the read level back. A write
// Unlock that fails under downgraded read holds is sent again in the
// background with the hold's next renewal, so the write level does not
// outlive it by more than a renewal period while Redis answers. A Lock whose ctx
// carries a read hold gets [ErrUpgradeNotSupported] at once instead of
// deadlocking on itself; a plain Lock while the handle has plain read holds
// waits for them, as a sync.RWMutex's would, and so does a plain RLock or
// Lock while the handle holds the write lock. Goroutines are not told
// apart, so these wait (another goroutine's may be right to); made from
// the goroutine that holds, they end only with ctx, and then the error
// (wrapping ctx.Err()) says what the handle holds and what to do: "this
// handle holds a read lock: a Lock waits for its RUnlock (a read hold
// cannot be upgraded)", or that this handle holds the write lock and a
// downgrade or re-entry goes through the ctx Do passes to fn.
//
// After a downgrade the waiting readers join the downgraded reader as soon
// as the write hold ends.
//
// # Writer preference
//
// A writer that has to wait adds itself to the writers' sorted set, scored
// with the time (on the Redis server's clock) at which its announcement
// lapses, [WaiterTimeout] ahead. While any announcement is live, new readers
// wait; a read hold's ctx may re-enter it, and the write hold's ctx may
// take read holds. Once the current readers leave, the last one
// wakes a writer.
//
// A waiting writer's announcement is kept alive by its process: while the
// writer is parked, its client moves the announcements of all its parked
// waiters WaiterTimeout ahead once a second, in one pipeline, as it
// refreshes rlock and fairlock places in line (the server's clock as the
// last refresh read it, moved on by the client's monotonic clock, so that
// a step of the client's wall clock does not move an announcement; a
// cluster's nodes are taken to agree on the time within much less than
// WaiterTimeout), and tells a
// waiter to attempt when its announcement is gone or the lock is free. So
// a parked waiter makes no attempt to stay announced, while a writer that
// crashed while waiting holds new readers back for at most WaiterTimeout
// (2s) after its client's last refresh (give or take how late that
// client's reading of the server's clock was: a round trip). A writer
// whose Lock gives up (ctx done) withdraws its announcement and, if it was
// the last one, wakes the readers it held back.
//
// A reader that has to wait announces itself too, in the readers' sorted
// set, kept alive the same way. A write release clears the writers'
// announcements and makes the readers announced then the readers whose
// turn it is: until each of them has come (or given up, or lapsed), a new
// writer does not take the lock, even a free one, and they come in past
// the announcements of writers that arrive meanwhile. So the readers that
// waited behind a write hold go before the next writer, as with
// [sync.RWMutex], then the writers that announced themselves go before
// later readers: readers and writers alternate under contention, and
// neither side starves the other. A reader that crashed while waiting
// still gets its turn at the next write release: the lock then stays free
// for at most WaiterTimeout, writers waiting for the reader and new readers
// behind the writers' announcements. A reader whose RLock gives up leaves
// the turn, and if it was the last one, wakes the writers (the last of the
// handle's goroutines waiting to read, that is: they share the handle's
// announcement).
//
// # Waking waiters
//
// Readers and writers listen on separate channels, so that each release
// wakes only waiters that can proceed: a write release wakes every waiting
// reader of every process at once (they can all share the lock) and one
// writer per process; the read release that frees the lock wakes one
// writer per process and no reader (new readers were only waiting for the
// writers). Notifications go over one pub/sub connection per Redis client,
// however many waiters. Every sleep is bounded by the remaining lease of
// whoever blocks the waiter (or of the announcements), so a lost
// notification costs at most that, and after a pub/sub reconnect every
// waiter retries at once. A failed RLock or Lock leaves nothing behind: no
// hold, no announcement, no subscription; if ctx ends while an acquire
// script is in flight, whatever the script took is given back. RLock and
// Lock return when ctx ends, also while Redis does not answer: taking the
// announcement away and the give-back finish in the background within a
// second, and the handle's next call waits for them.
//
// Unlike rlock and fairlock, a release does not hand the lock to a waiter
// in its script (the one-hop handoff): a write release admits every
// waiting reader at once, which a grant to the one waiter at the head of
// a line does not express, and writers announce themselves for writer
// preference instead of standing in a line. A woken waiter tries again,
// one more round trip than a grant.
//
// # Fencing tokens
//
// With [WithFencing], every first write acquisition takes a new token,
// which [RWMutex.Token] returns while the write hold lasts, as rlock's
// WithFencing does: the larger of the name's counter + 1 and the Redis
// server's clock (TIME) in microseconds, stored back as the counter,
// which lives one lease after the last token. Tokens strictly increase
// across all handles and processes, and keep increasing when the counter
// expired or Redis lost it (a restart without persistence, a failover to
// a replica that missed it), as long as the server's clock has not been
// set back by more than the time since the last token was taken (after a
// failover, the promoted replica's clock must not be behind the old
// primary's by more than that either). Read holds take no token: readers
// share the lock, so a token per reader would not tell a stale reader
// from a live one. A writer that downgrades keeps its read holds, not
// its token. A hold that the handle gave up (lost, or its release
// failed) while it still stands in Redis is never taken on again: the
// handle's next hold has an id of its own, takes its own token, and waits
// for the hold given up to lapse as behind any other holder.
//
// # Leases, the watchdog and loss
//
// Without [WithLeaseTime], holds have the lease [WithWatchdogTimeout] (30s by
// default) and the client's shared watchdog renews them, both modes in one
// script, every third of that. When a renewal finds that the handle holds
// nothing any more, or renewals keep failing until the lease has run out,
// the hold is lost: [RWMutex.Done] closes and the [WithOnLost] hook runs,
// with an error that names another holder's process when the renewal found
// one (the writer first): "the lock was taken over: it is held for writing
// by pid 4121 on web-3 (owner id …)". With WithLeaseTime each hold simply expires d after the handle's last RLock or
// Lock. A handle's hold runs from its first acquisition, in either mode, to
// the moment it holds nothing; Done belongs to that hold.
//
// # Faults
//
// A release whose reply is lost (the connection broke after Redis ran the
// script) is retried by RUnlock or [RWMutex.Unlock] itself, never by
// go-redis, and the retry knows that the first may have gone through: it
// releases nothing more and reports success. When the release of the
// handle's last level fails nonetheless, the hold ends all the same:
// renewals stop and Done closes, so the lock frees itself when its lease
// runs out instead of being kept alive for a holder that wanted it released.
// An acquisition whose outcome is unknown (a lost reply, or ctx ending while
// the script was in flight) is given back before the error is returned, and
// an error caused by a done ctx matches ctx.Err() with errors.Is.
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
// VM) can outlive its lease without noticing until it runs again. Writer
// preference and the readers' turn are best effort across a crash: a
// crashed waiter's announcement lapses after WaiterTimeout, and a live
// waiter that cannot reach Redis for that long loses its place until its
// next attempt.
//
// # What rlock has and RWMutex has not
//
// RWMutex has no IsHeld or HoldCount, no WithReplicaAck, and fencing
// tokens for write holds only (see Fencing tokens). [RWMutex.IsLocked] and
// [RWMutex.TTL] report the lock in either mode; Done reports this handle's
// hold.
//
// # Testing with miniredis
//
// The scripts run unchanged on miniredis. miniredis expires keys only when
// the test advances its clock (FastForward), so leases never run out by
// themselves there; a waiting writer's or reader's announcement (and the
// readers' turn) also ends when the clock is advanced past WaiterTimeout.
// With [WithFencing], a token reads miniredis's TIME, which follows
// SetTime (the real clock if the test never set it), while the fencing
// counter expires by FastForward: a test that sets the time and then
// fast-forwards past the counter's lifetime gets the last token again,
// unless it moves the time forward too.
package rwlock
