package rlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func TestReplicaAckInvalid(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	for name, f := range map[string]func(){
		"no replicas":    func() { rlock.WithReplicaAck(0, time.Second) },
		"no timeout":     func() { rlock.WithReplicaAck(1, 0) },
		"unpinnable rdb": func() { rlock.New(ring, "x", rlock.WithReplicaAck(1, time.Second)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// A standalone server has no replica: an acknowledged acquisition fails
// with ErrNotReplicated, after the timeout, and leaves nothing behind.
func TestReplicaAckWithoutReplicas(t *testing.T) {
	rdb := redistest.SharedServer(t).NewClient(t)
	name := redistest.UniqueName(t)
	m := rlock.New(rdb, name, rlock.WithReplicaAck(1, 100*time.Millisecond))
	start := time.Now()
	err := m.Lock(t.Context())
	if !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("Lock = %v, want ErrNotReplicated", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("Lock failed after %v, want after the 100ms WAIT timeout and no retries", d)
	}
	if ok, err := m.TryLock(t.Context()); ok || !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("TryLock = %v, %v; want ErrNotReplicated", ok, err)
	}
	assertNoKeys(t, rdb, name)
	select {
	case <-m.Done():
	default:
		t.Fatal("Done open after failed acquisitions")
	}
}

// On a cluster the acquire and the WAIT go to the primary of the lock's
// slot (a wrong node would answer MOVED); the cluster has no replicas, so
// the acquisition is undone.
func TestReplicaAckCluster(t *testing.T) {
	rdb := redistest.SharedCluster(t).NewClient(t)
	name := redistest.UniqueName(t)
	m := rlock.New(rdb, name, rlock.WithReplicaAck(1, 100*time.Millisecond))
	if err := m.Lock(t.Context()); !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("Lock on a cluster without replicas = %v, want ErrNotReplicated", err)
	}
	if n := rdb.Exists(t.Context(), keyspace.NewNames(name).Lock()).Val(); n != 0 {
		t.Fatal("the unacknowledged acquisition was left behind")
	}
}
