// Package exactly makes a request to Redis act once and in time.
//
// A command can run long after its client gave up (TCP retransmits it
// through a stall). A receipt makes a resend report the first run's
// outcome, but a copy can outlive any receipt, so every request that
// counts also carries a deadline on the server's clock: a copy run after
// it changes nothing, and a receipt lives past it. Every copy carries the
// same deadline, so it either finds the receipt or does nothing, as long
// as the server's clock is not set back. A bad clock estimate
// (ServerClock) costs a refused round trip, never safety.
package exactly
