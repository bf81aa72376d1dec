package keyspace

// Receipt kinds of a semaphore's requests, so that a retry acts once.
const (
	ReceiptAcquire = "acquire" // Semaphore.Acquire, TryAcquire
	ReceiptRelease = "release" // Semaphore.Release, AddPermits
	ReceiptSet     = "set"     // SetPermits, TrySetPermits of Semaphore and Leased
	ReceiptDrain   = "drain"   // Semaphore.Drain
	ReceiptAdd     = "add"     // Leased.AddPermits
)

// ReceiptForce is a lock's ForceUnlock's; deleted once read, so not listed.
const ReceiptForce = "force"

// ReceiptKinds lists a semaphore's receipt kinds, for tools.
var ReceiptKinds = []string{ReceiptAcquire, ReceiptRelease, ReceiptSet, ReceiptDrain, ReceiptAdd}

// Receipt kinds of a latch, under Names.Latch.
const (
	ReceiptCountDown = "latch:countdown" // Latch.CountDown
	ReceiptSetCount  = "latch:set"       // Latch.TrySetCount
	ReceiptDelete    = "latch:delete"    // Latch.Delete
)

// LatchReceiptKinds lists a latch's receipt kinds, for tools.
var LatchReceiptKinds = []string{ReceiptCountDown, ReceiptSetCount, ReceiptDelete}

// ReceiptPrefix starts every receipt key of the given kind.
func (n Names) ReceiptPrefix(kind string) string { return n.Sub(kind + ":") }

// Receipt is the receipt key of one request of the given kind.
func (n Names) Receipt(kind, id string) string { return n.ReceiptPrefix(kind) + id }
