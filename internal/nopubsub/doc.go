// Package nopubsub holds only tests: every primitive on deployments where
// subscriptions are refused, so that waiters poll (see package hub's
// Poll): behind a real twemproxy (nutcracker) started by the tests, and
// on a real server whose ACL user has no pub/sub rights. They check
// mutual exclusion under contention across clients, that a release's
// grant reaches a polling waiter within two poll intervals, and that no
// release fails for want of PUBLISH.
package nopubsub
