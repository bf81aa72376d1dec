// Package internal holds what every redisync primitive shares and no user
// should depend on: key and channel naming (one hash tag per primitive
// name), owner ids, the shared sentinel errors and their wrapping, the
// per-client registry of pub/sub hub, watchdog and the tidier of what
// callers that gave up left to undo (tidy.go), the one wait loop
// every blocking acquire goes through, and the reports to a client's
// Observer (package observe; see report.go).
//
// Subpackages: watchdog (batched lease renewal and loss detection), hold
// (one lock handle's hold: levels, Done, undo and release retries, shared
// by the locks), keyslot (Redis Cluster hash slots), cmdstats (the server
// time of commands from INFO commandstats, for redisync bench and the
// bench module) and redistest (real redis-server processes and clusters
// for the test tiers).
package internal
