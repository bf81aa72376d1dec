package keyspace

// Latch is a latch's count: not the main key, where a semaphore's is.
func (n Names) Latch() string { return n.tag + ":latch" }

// LatchChannel announces a latch's zero, apart from the lock's channel.
func (n Names) LatchChannel() string { return n.tag + ":latch:chan" }
