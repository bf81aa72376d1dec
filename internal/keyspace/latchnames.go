package keyspace

// The keys and channel of a count-down latch (package latch). They carry a
// ":latch" suffix of their own rather than the name's main key: a latch's
// count is a string integer, as a semaphore's permit count is, and under
// the same key the two could not be told apart, neither by a script nor
// by an operator reading them. A latch may therefore share its name with a
// lock; a latch key holding anything but a positive count is WRONGTYPE.

// Latch is the key holding a latch's count; it exists only while the
// count is above zero.
func (n Names) Latch() string { return n.tag + ":latch" }

// LatchChannel is the channel on which a latch announces that its count
// reached zero (or that it was deleted). It is not the name's lock
// channel: a lock's release message wakes one waiter, and must not be
// spent on a latch waiter that cannot use it.
func (n Names) LatchChannel() string { return n.tag + ":latch:chan" }
