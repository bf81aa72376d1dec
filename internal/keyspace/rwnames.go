package keyspace

import "github.com/redisync/redisync/internal/script"

// The further keys and channels of a read-write lock (package rwlock),
// besides Lock (the lock hash) and Channel (which wakes its readers).

// ReaderPrefix starts the timeout key of every reader of a read-write lock:
// ReaderPrefix() + hold id. The rwlock scripts derive the timeout keys of
// other readers from it; they stay in the lock's hash slot because the
// prefix already contains the hash tag.
func (n Names) ReaderPrefix() string { return n.tag + ":reader:" }

// ReaderTimeout is the key whose expiry is the read lease of hold id
// (see script.RWKeys.ReaderKey).
func (n Names) ReaderTimeout(id string) string { return n.ReaderPrefix() + id }

// Writers is the zset of the writers waiting for a read-write lock, scored
// by the deadline of their announcement.
func (n Names) Writers() string { return n.tag + ":writers" }

// Readers is the zset of the readers waiting for a read-write lock,
// scored by the deadline of their announcement.
func (n Names) Readers() string { return n.tag + ":readers" }

// Turn is the zset of the readers whose turn it is: those that waited
// behind the last write hold of a read-write lock and have yet to come.
func (n Names) Turn() string { return n.tag + ":turn" }

// WriterChannel is the channel that wakes the writers waiting for a
// read-write lock.
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
