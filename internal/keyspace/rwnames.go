package keyspace

import "github.com/redisync/redisync/internal/script"

// ReaderPrefix starts a read-write lock's reader timeout keys (+ hold id).
func (n Names) ReaderPrefix() string { return n.tag + ":reader:" }

// ReaderTimeout is the key whose expiry is hold id's read lease.
func (n Names) ReaderTimeout(id string) string { return n.ReaderPrefix() + id }

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
