// Command redisync shows what redisync's locks and semaphores are for, and
// helps operate them in a live Redis.
//
// Usage:
//
//	redisync COMMAND [flags] [args]
//
// The commands are:
//
//	demo      see why a distributed lock matters: a shop that oversells and a
//	          cache stampede, without a lock and with each primitive
//	inspect   show who holds a lock or semaphore, its remaining lease, its
//	          queue and its waiters (read-only)
//	list      list every name in use, with its kind, holder and TTL
//	          (read-only; SCAN, never KEYS)
//	unlock    free a stuck lock, whoever holds it, and wake its waiters
//	          (needs --force)
//	semaphore show a semaphore's permits; set or add them, or release a
//	          leased permit by its id (needs --force)
//	lock      run a command while holding a lock (or one of N permits), as
//	          flock(1) does, and stop it when the lock is lost
//	bench     measure the primitives' throughput, handoff latency and Redis
//	          commands per operation on your deployment
//
// Every command takes --redis URL (redis://[user:password@]host:port[/db],
// or rediss:// for TLS) or --cluster host:port,... for a Redis Cluster.
// inspect, list, unlock, semaphore and lock default to redis://localhost:6379; demo and bench
// default to an embedded miniredis, so they run with no setup:
//
//	go run github.com/redisync/redisync/cmd/redisync@latest demo
//
// NAME, for inspect, unlock, semaphore and lock, is the name the code passed to New
// ("orders:42"), not a Redis key.
//
// Exit codes: 0 on success, 1 when something failed at run time (an
// unreachable server, a Redis error, a failed check), 2 for a mistake on
// the command line, 3 when inspect or semaphore show found nothing in
// Redis under a NAME, 130 (SIGINT) or 143 (SIGTERM) when a signal ended a
// command before it was done. lock exits with its command's status, or 75
// when --wait ran out, 76 when the lock was lost while the command ran,
// 126 and 127 when the command could not be started or was not found.
// Run "redisync help" for the list of commands and
// "redisync COMMAND --help" for a command's flags.
package main
