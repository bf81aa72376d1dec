package keyspace

import "github.com/redisync/redisync/internal/script"

// Every key and channel is built here, under the hash tag {name}. A name
// with '}' still works: every key of it starts with the same tag bytes.

// Prefix starts every key and channel of the library.
const Prefix = "redisync:"

// Names builds the keys and channels of one primitive.
type Names struct {
	Name string
	tag  string
}

// NewNames returns the naming of the primitive called name.
func NewNames(name string) Names {
	return Names{Name: name, tag: Prefix + "{" + name + "}"}
}

// Lock is the main key: the lock hash, or a semaphore's count.
func (n Names) Lock() string { return n.tag }

// Fence is the last fencing token taken (never below the server's clock in
// microseconds, so it may expire).
func (n Names) Fence() string { return n.tag + ":fence" }

// Channel is the release channel shared by all waiters.
func (n Names) Channel() string { return n.tag + ":chan" }

// WaiterChannel is the channel on which a release grants owner the lock.
func (n Names) WaiterChannel(owner string) string { return n.tag + ":chan:" + owner }

// Queue is a mutex's waiter list.
func (n Names) Queue() string { return n.tag + ":queue" }

// Place holds a mutex waiter's last refused hold id. Place("") is the prefix.
func (n Names) Place(owner string) string { return n.tag + ":place:" + owner }

// Value is a waiting election candidate's value. Value("") is the prefix.
func (n Names) Value(owner string) string { return n.tag + ":value:" + owner }

// Timeouts is a fair lock's zset of waiter deadlines.
func (n Names) Timeouts() string { return n.tag + ":timeouts" }

// Sub returns a further key of the primitive, in the same slot.
func (n Names) Sub(suffix string) string { return n.tag + ":" + suffix }

// ReaderPrefix starts a read-write lock's reader timeout keys (+ hold id).
func (n Names) ReaderPrefix() string { return n.tag + ":reader:" }

// Writers is a read-write lock's zset of waiting writers, by deadline.
func (n Names) Writers() string { return n.tag + ":writers" }

// Readers is a read-write lock's zset of waiting readers, by deadline.
func (n Names) Readers() string { return n.tag + ":readers" }

// Turn is the zset of readers whose turn came with the last write release.
func (n Names) Turn() string { return n.tag + ":turn" }

// WriterChannel wakes a read-write lock's waiting writers.
func (n Names) WriterChannel() string { return n.tag + ":wchan" }

// RWKeys returns the keys and channels of the read-write lock.
func (n Names) RWKeys() script.RWKeys {
	return script.RWKeys{
		Lock:          n.Lock(),
		Writers:       n.Writers(),
		Readers:       n.Readers(),
		Turn:          n.Turn(),
		ReaderPrefix:  n.ReaderPrefix(),
		ReadChannel:   n.Channel(),
		WriterChannel: n.WriterChannel(),
		Fence:         n.Fence(),
		Others:        n.Others(KindRWLock),
	}
}

// Latch is a latch's count: not the main key, where a semaphore's is.
func (n Names) Latch() string { return n.tag + ":latch" }

// LatchChannel announces a latch's zero, apart from the lock's channel.
func (n Names) LatchChannel() string { return n.tag + ":latch:chan" }

// Kind is a kind of primitive; a name keeps it while any of its keys exists.
type Kind int

const (
	KindMutex     Kind = iota // reentrant or fair mutex, or election
	KindRWLock                // read-write lock
	KindSemaphore             // counting semaphore
	KindLeased                // leased semaphore
)

// Others returns the keys other kinds than k keep besides their main key:
// while one exists, a script of kind k does not create its main key.
func (n Names) Others(k Kind) []string {
	mutex := []string{n.Queue(), n.Timeouts()}
	rw := []string{n.Writers(), n.Readers(), n.Turn()}
	leased := []string{n.Sub("permits")}
	switch k {
	case KindMutex:
		return append(rw, leased...)
	case KindRWLock:
		return append(mutex, leased...)
	case KindSemaphore:
		return append(append(append(mutex, rw...), n.Fence()), leased...)
	default:
		return append(append(mutex, rw...), n.Fence())
	}
}

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
