package keyspace

// A name belongs to one kind of primitive for as long as any key of it
// exists. The main key tells most kinds apart (a hash with or without a
// mode or a value, a string count, a zset of leases), but a primitive may
// keep other keys while its main key is absent: a mutex's line after its
// holder's lease ran out, a read-write lock's announced waiters and
// readers' turn, a leased semaphore's total while no permit is out, a
// lock's fencing counter after its release. Where a script would create
// its main key, it refuses the name while one of those of another kind
// exists (lua/part/kind.lua).

// Kind is a kind of primitive, as its keys tell it.
type Kind int

const (
	// KindMutex is a reentrant or fair mutex, or an election: the lock
	// hash, its line (a waiter list, a fair lock's deadlines) and its
	// fencing counter.
	KindMutex Kind = iota
	// KindRWLock is a read-write lock: the lock hash with a mode, its
	// writers, readers and the readers' turn, and its fencing counter.
	KindRWLock
	// KindSemaphore is a counting semaphore: its count is the main key.
	KindSemaphore
	// KindLeased is a leased semaphore: its leases, the main key, and its
	// total.
	KindLeased
)

// Others returns the keys of the name that primitives of other kinds
// than k keep besides their main key, and that may exist while it is
// absent: while one of them exists, a primitive of kind k does not
// create its main key (lua/part/kind.lua). Per-owner keys (places in
// line, reader timeouts, receipts) live and die with these, and are not
// listed.
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
