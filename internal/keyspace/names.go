package keyspace

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
