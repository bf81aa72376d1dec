// Package perclient keeps what the handles of one go-redis client share
// (Attach): its pub/sub hub, its watchdog, its keeper of parked waiters'
// places, and its tidier of what callers that gave up left to undo
// (TidyUp). It also reaches a primary through the client for a WAIT
// (PrimaryConn) and tells an unreachable server from a slow one.
package perclient
