// Package election implements leader election on Redis: of the candidates
// that campaign under one name, one leads at a time, the others wait in
// line to take over, and anyone can ask who leads or be told when that
// changes.
//
// It is the shape of etcd's concurrency.Election (Campaign, Proclaim,
// Resign, Leader, Observe) with the loop of client-go's leaderelection
// (Run: lead, work while leading, stop when the leadership is lost).
//
//	e := election.New(rdb, "report-scheduler")
//	err := e.Run(ctx, "host-7:8080", func(ctx context.Context) error {
//		return schedule(ctx) // ctx is cancelled when the leadership is lost
//	})
//
// # Data layout
//
// An election's leadership is a fair lock (package fairlock) whose hold
// the leader has, kept by the fair lock's scripts: the hash
// redisync:{name} (field: the leadership's hold id, the leader's owner id
// and a number; '@token': its term; '@value': its value; '@said': the
// number of its last Proclaim), the candidates' line
// redisync:{name}:queue with its deadlines redisync:{name}:timeouts, each
// waiting candidate's place redisync:{name}:place:<owner id> and channel
// redisync:{name}:chan:<owner id>, and its value redisync:{name}:value:<owner
// id>, which lapses with its deadline in line. The term's counter
// redisync:{name}:fence lives one lease after the last term began. Every
// change of leader or value is published on redisync:{name}:chan. Every
// key shares the hash tag {name}, so on a Redis Cluster an election lives
// in one slot. An election and a lock cannot share a name: a Campaign or
// Leader on a name that a lock, a read-write lock or a semaphore uses is
// an error wrapping ErrWrongType and changes nothing, and so is a lock's
// Lock on an election's name. A latch's keys have a suffix of their own: a
// latch may share its name with an election.
//
// # Campaigning and the line
//
// Campaign takes the leadership when nobody leads and nobody waits before
// it; otherwise it joins the end of the line with its value and waits.
// Resign grants the leadership to the first live candidate in line, with
// its value, in the same script, and tells it on its channel: the next
// leader takes over in one hop, without a herd, and observers are told in
// the same script. Live means its process has refreshed its place within
// the grant lease (3s): a candidate whose process died is passed by, and
// one that died just after it was granted the leadership keeps it for at
// most that long. A candidate whose Campaign ends (ctx) leaves the line
// with its value before it returns. Campaigns of goroutines sharing one
// handle wait behind one another in the process: a handle leads at most
// once at a time.
//
// # Terms
//
// The term of a leadership (Term, Leader.Term) is its fencing token: the
// larger of the name's counter + 1 and the Redis server's clock (TIME) in
// microseconds, stored back as the counter. Terms strictly increase from
// one leader to the next, across every handle and process, and keep
// increasing when Redis lost the counter (a restart without persistence,
// a failover to a replica that missed it), as long as the server's clock
// has not been set back by more than the time since the last term began
// (after a failover, the promoted replica's clock must not be behind the
// old primary's by more than that either). A resource that remembers the
// highest term it has seen can refuse a stale leader.
//
// # Leases, the watchdog and loss
//
// A leadership has the lease [WithWatchdogTimeout] (30s by default), which
// the client's shared watchdog renews every third of it. When a renewal
// finds the leadership gone or another's, or renewals keep failing until
// the lease has run out, it is lost: [Election.Done] closes, the ctx Run
// gives fn is cancelled and the [WithOnLost] hook runs. The leader's
// validity is measured from when its last renewal was sent, so a
// partitioned leader learns of the loss before the lease ends on the
// server and another candidate can lead. A crashed leader is replaced
// within its lease.
//
// # Observing
//
// Observe sends the current leader, then every change: a new leader (a
// higher term) or a new value in the same term (Proclaim). Changes are
// published by the scripts that make them, and an observer reads the
// leader again at least every 1s, so that a lost
// notification, or a leader whose lease ran out with no candidate to take
// over, hides a change for at most that long. After a pub/sub reconnect
// every observer reads at once. One pub/sub connection per Redis client
// serves every observer and candidate (per primary on a cluster).
//
// # Limits
//
// The limits of a Redis lease lock apply: a leader leads only while its
// lease is valid, on one primary that has not lost the write. Replication
// is asynchronous: a failover can lose the leadership, and two processes
// may then act as leaders until the old one's renewal fails; a paused
// process can outlive its lease. fn must stop when its ctx is cancelled,
// and a resource that must never see two leaders should check terms.
// Observers see the leader Redis has: one that led for less than
// a second and whose notification was lost may never be seen.
//
// # Testing with miniredis
//
// The scripts run unchanged on miniredis. Its TIME, which terms and
// deadlines in line read, follows SetTime; its keys expire only when the
// test advances its clock with FastForward.
package election
