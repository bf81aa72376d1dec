// Package exactly makes a request to Redis act once and in time: every
// script that takes, gives back or counts carries a deadline on the
// server's clock (RequestWindow, ServerClock, InTime), after which a copy
// run late changes nothing, and one that counts writes a receipt, so that
// a resend after a lost reply reports what the first run did (Once).
package exactly
