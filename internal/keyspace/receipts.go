package keyspace

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

// ReceiptPrefix starts every receipt key of the given kind.
func (n Names) ReceiptPrefix(kind string) string { return n.Sub(kind + ":") }

// Receipt is the receipt key of one request of the given kind.
func (n Names) Receipt(kind, id string) string { return n.ReceiptPrefix(kind) + id }
