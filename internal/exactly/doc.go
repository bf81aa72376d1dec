// Package exactly makes a request to Redis act once and in time.
//
// A receipt makes a resend report the first run's outcome, but a copy can
// run after any receipt expired (TCP retransmits through a stall). So a
// request also carries a deadline on the server's clock, past which it
// changes nothing, and its receipt outlives the deadline: every copy finds
// the receipt or does nothing, unless the server's clock is set back.
package exactly
