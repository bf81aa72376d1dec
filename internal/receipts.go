package internal

import (
	"context"
	"fmt"
	"time"
)

// A semaphore writes a receipt key for each request that changes its
// count, so that a retried request acts once. The kinds of request:
const (
	ReceiptAcquire = "acquire" // Semaphore.Acquire, TryAcquire
	ReceiptRelease = "release" // Semaphore.Release, AddPermits
	ReceiptSet     = "set"     // SetPermits, TrySetPermits of Semaphore and Leased
	ReceiptDrain   = "drain"   // Semaphore.Drain
	ReceiptAdd     = "add"     // Leased.AddPermits
)

// ReceiptForce is the receipt kind of a lock's ForceUnlock: a retried
// ForceUnlock reports what its first run did. The lock deletes it once the
// outcome is known, so it is not among ReceiptKinds, which tools read on
// semaphores.
const ReceiptForce = "force"

// ReceiptKinds lists every kind of a semaphore's receipts, for tools that
// read them (a latch's are LatchReceiptKinds).
var ReceiptKinds = []string{ReceiptAcquire, ReceiptRelease, ReceiptSet, ReceiptDrain, ReceiptAdd}

// The receipt kinds of a count-down latch (package latch): a retried
// CountDown, TrySetCount or Delete reports what its first run did. They
// start with "latch:", so every key of a latch starts with Names.Latch.
const (
	ReceiptCountDown = "latch:countdown" // Latch.CountDown
	ReceiptSetCount  = "latch:set"       // Latch.TrySetCount
	ReceiptDelete    = "latch:delete"    // Latch.Delete
)

// LatchReceiptKinds lists the receipt kinds of a latch, for tools that
// read them.
var LatchReceiptKinds = []string{ReceiptCountDown, ReceiptSetCount, ReceiptDelete}

// ReceiptTTL is how long the receipt of a request run by Once lives past
// the request's deadline (see RequestWindow), after which no copy of the
// request changes anything. Receipts expire by themselves.
const ReceiptTTL = 10 * time.Second

// AcquireReceiptTTL is how long the receipt of a counting semaphore's
// acquire request lives. Such a request is retried for as long as its
// caller waits, and a receipt that expired before its last retry would let
// the request take its permits twice; so the receipt is not trusted to a
// short lifetime: it is kept until its request's outcome is known, then
// deleted (see package semaphore). This lifetime is only a safety net
// against receipts whose handle went away first, or that a copy of the
// request still on its way (in a TCP retransmission) could find, and it
// bounds how long Redis may be out of reach during one Acquire.
const AcquireReceiptTTL = time.Hour

// ReceiptPrefix starts every receipt key of the given kind.
func (n Names) ReceiptPrefix(kind string) string { return n.Sub(kind + ":") }

// Receipt is the receipt key of one request of the given kind.
func (n Names) Receipt(kind, id string) string { return n.ReceiptPrefix(kind) + id }

// onceRetries is how many times Once resends a request whose reply was
// lost.
const onceRetries = 2

// onceRestarts is how many times Once starts a request anew, under a new
// receipt and deadline, after Redis refused it as late before it ran at
// all (a clock estimate that was off; see ServerClock).
const onceRestarts = 2

// Once runs request, a script that changes something at most once per
// receipt, under a receipt key made by receipt (see Names.Receipt), with a
// deadline on the server's clock (see RequestWindow). The script writes
// the receipt to live ReceiptTTL past the deadline: a request whose reply
// was lost is resent under the same receipt and deadline, and a resent
// request that finds the first went through changes nothing and reports
// what the first did; a copy that runs after the deadline changes nothing
// at all.
//
// The scripts run without go-redis resends (see package script), so the
// resends are only these, and none is sent after the deadline. A copy
// refused as late is known to have changed nothing, and so is every other
// copy of its request when none was sent before it, or when the refusal
// came while a receipt written in time would still live; then Once learns
// the server's clock from the refusal and starts the request anew.
// Once returns the last error, made to match ctx.Err() when ctx is done.
func Once(ctx context.Context, clock *ServerClock, receipt func() string, request func(receipt string, deadline int64) error) error {
	rcpt, start, deadline := receipt(), time.Now(), clock.Deadline(RequestWindow)
	restarts := 0
	for try := 0; ; try++ {
		err := request(rcpt, deadline)
		if now, late := Late(err); late {
			clock.Learn(now)
			sure := try == 0 || now <= deadline+ReceiptTTL.Milliseconds()
			if !sure || restarts == onceRestarts || CtxDone(ctx) != nil {
				return CtxErr(ctx, fmt.Errorf("%w: %w", ErrLate, err))
			}
			restarts++
			rcpt, start, deadline, try = receipt(), time.Now(), clock.Deadline(RequestWindow), -1
			continue
		}
		if !OutcomeUnknown(err) || CtxDone(ctx) != nil || try == onceRetries || time.Since(start) >= RequestWindow {
			return CtxErr(ctx, err)
		}
	}
}
