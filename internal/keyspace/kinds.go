package keyspace

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
