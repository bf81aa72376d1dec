package keyspace

// Latch is a latch's count, while above zero. Not the main key: a string
// count there could not be told from a semaphore's.
func (n Names) Latch() string { return n.tag + ":latch" }

// LatchChannel announces a latch's zero. Not the lock channel, whose
// release message wakes one waiter and must not be spent on a latch's.
func (n Names) LatchChannel() string { return n.tag + ":latch:chan" }
