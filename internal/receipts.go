package internal

import (
	"context"
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

// ReceiptTTL is how long the receipt of a request run by Once lives:
// longer than any resend of its request, since Once sends none after half
// of it. Receipts expire by themselves.
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

// Once runs request, a script that changes something at most once per
// receipt, under the receipt key receipt (see Names.Receipt), which the
// script writes with the lifetime ReceiptTTL: a request whose reply was
// lost is resent under the same receipt, and a resent request that finds
// the first went through changes nothing and reports what the first did.
//
// The scripts run without go-redis resends (see package script), so the
// resends are only these, and none starts after half the receipt's
// lifetime: with a read timeout under that, every send lands while the
// receipt lives. Once returns the last error, made to match ctx.Err()
// when ctx is done.
func Once(ctx context.Context, receipt string, request func(receipt string) error) error {
	start := time.Now()
	for try := 0; ; try++ {
		err := request(receipt)
		if !OutcomeUnknown(err) || CtxDone(ctx) != nil || try == onceRetries || time.Since(start) > ReceiptTTL/2 {
			return CtxErr(ctx, err)
		}
	}
}
