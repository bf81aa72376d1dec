// Package faulttest is the fault tolerance and safety suite of redisync. It
// holds only tests: they inject real faults (a SIGKILLed holder process, a
// stalled or cut network, a restarted or paused server, killed pub/sub
// connections, lost replies, a Sentinel failover) into real redis-server
// processes and check that every primitive keeps its promises, reports
// honestly when it cannot, and never hangs.
//
// The suite is written once against a small interface (Lock, Unlock, Done)
// and runs against every primitive listed in primitives_test.go; adding a
// primitive is one entry there. The tests live in one package of their own,
// rather than beside each primitive, because they share one TestMain that
// doubles as the helper process (the test binary re-executed to hold a
// lock and be killed), one history checker and one chaos soak, and because
// their cost (tens of seconds of real faults) should not slow down the
// primitives' own fast test runs.
package faulttest
