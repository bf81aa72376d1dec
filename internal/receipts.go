package internal

import "time"

// A counting semaphore writes a receipt key for each request that changes
// its count, so that a retried request acts once. The kinds of request:
const (
	ReceiptAcquire = "acquire" // Acquire, TryAcquire
	ReceiptRelease = "release" // Release, AddPermits
	ReceiptSet     = "set"     // SetPermits, TrySetPermits
	ReceiptDrain   = "drain"   // Drain
)

// ReceiptKinds lists every kind of receipt, for tools that read them.
var ReceiptKinds = []string{ReceiptAcquire, ReceiptRelease, ReceiptSet, ReceiptDrain}

// ReceiptTTL is how long a receipt lives: longer than any retry of its
// request or clean-up after a cancelled ctx. Receipts expire by themselves.
const ReceiptTTL = 10 * time.Second

// ReceiptPrefix starts every receipt key of the given kind.
func (n Names) ReceiptPrefix(kind string) string { return n.Sub(kind + ":") }

// Receipt is the receipt key of one request of the given kind.
func (n Names) Receipt(kind, id string) string { return n.ReceiptPrefix(kind) + id }
