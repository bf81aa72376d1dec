// Package perclient keeps what the handles of one go-redis client share
// (Attach): its pub/sub hub, watchdog, keeper of waiters' places and
// tidier of clean-ups (TidyUp); it also pins a connection to a primary for
// WAIT (PrimaryConn) and tells an unreachable server from a slow one.
package perclient
