package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// reentrantLock is a fenced lock whose holds re-enter through the ctx Do
// gives its function.
type reentrantLock interface {
	mutexLike
	Done() <-chan struct{}
	Token() uint64
}

// A hold of two levels (a re-entry under Do) given up as lost while it
// still stood in Redis is never taken back: its release is owed by its
// hold id and sent before the handle's next Lock, which takes a new hold
// with a new token; that Lock's Unlock frees the lock, and nothing of the
// old hold is left (once, adopted with its count, it left a level that no
// caller released and the watchdog renewed for as long as the handle
// lived).
func TestGivenUpHoldIsReleasedByID(t *testing.T) {
	const lease = 2 * time.Second
	kinds := []struct {
		name string
		new  func(rdb redis.UniversalClient, name string) reentrantLock
	}{
		{"rlock", func(rdb redis.UniversalClient, name string) reentrantLock {
			return rlock.New(rdb, name, rlock.WithWatchdogTimeout(lease), rlock.WithFencing())
		}},
		{"fairlock", func(rdb redis.UniversalClient, name string) reentrantLock {
			return fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(lease), fairlock.WithFencing())
		}},
		{"rwlock", func(rdb redis.UniversalClient, name string) reentrantLock {
			return rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithFencing())
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t)
			admin := srv.NewClient(t)
			name := redistest.UniqueName(t)
			proxy := redistest.NewProxy(t, srv.Addr())
			l := k.new(proxy.NewClient(t), name)
			var first uint64
			_ = l.Do(t.Context(), func(ctx context.Context) error {
				if err := l.Lock(ctx); err != nil { // the second level
					t.Fatal(err)
				}
				first = l.Token()
				proxy.Stall()
				// Keep the hold standing past the handle's giving up, as a
				// server whose clock runs slow would.
				if !admin.PExpire(t.Context(), keyspace.NewNames(name).Lock(), time.Minute).Val() {
					t.Fatal("no hold in Redis")
				}
				redistest.WaitFor(t, 2*lease, func() bool { return isClosed(l.Done()) })
				proxy.Resume()
				return nil
			})
			if err := l.Lock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if again := l.Token(); again <= first {
				t.Fatalf("token of the adopted hold %d, want above the one given up (%d)", again, first)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := admin.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val(); n != 0 {
				t.Fatalf("the lock is still held after the adopted hold's Unlock: %v",
					admin.HGetAll(t.Context(), keyspace.NewNames(name).Lock()).Val())
			}
		})
	}
}
