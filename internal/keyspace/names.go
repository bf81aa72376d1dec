package keyspace

// Keys and channels are built here and nowhere else, so that every key and
// channel of one primitive shares the hash tag {name} and lands in one
// Redis Cluster slot. The name appears verbatim inside the tag, so an
// operator finds everything of a lock with SCAN MATCH *name*.
//
// A name containing '}' still works: Redis takes the tag up to the first
// '}', and every key of the name starts with the same bytes up to there.

// Prefix starts every key and channel of the library.
const Prefix = "redisync:"

// Names holds the keys and channels of one primitive.
type Names struct {
	Name string
	tag  string
}

// NewNames returns the naming of the primitive called name.
func NewNames(name string) Names {
	return Names{Name: name, tag: Prefix + "{" + name + "}"}
}

// Lock is the main key: the lock hash, or the semaphore's permit count.
func (n Names) Lock() string { return n.tag }

// Fence is the fencing-token counter: the last token taken under the name,
// which expires a lease after it was taken (a token is never below the
// server's clock in microseconds, so the counter need not outlive it).
func (n Names) Fence() string { return n.tag + ":fence" }

// Channel is the unlock notification channel shared by all waiters.
func (n Names) Channel() string { return n.tag + ":chan" }

// WaiterChannel is the channel of one mutex waiter, on which a release
// grants it the lock.
func (n Names) WaiterChannel(owner string) string { return n.tag + ":chan:" + owner }

// Queue is a mutex's waiter list.
func (n Names) Queue() string { return n.tag + ":queue" }

// Place is a mutex waiter's place in line: a string holding the hold id of
// its last refused attempt, which expires when the waiter stops renewing
// it. Place("") is the prefix of all of them.
func (n Names) Place(owner string) string { return n.tag + ":place:" + owner }

// Value is an election candidate's value key: a string holding the value
// it campaigns with while it waits in line, which expires with its
// deadline there. Value("") is the prefix of all of them.
func (n Names) Value(owner string) string { return n.tag + ":value:" + owner }

// Timeouts is a fair lock's zset of waiter deadlines.
func (n Names) Timeouts() string { return n.tag + ":timeouts" }

// Sub returns a further key of the primitive, kept in the same slot.
func (n Names) Sub(suffix string) string { return n.tag + ":" + suffix }
