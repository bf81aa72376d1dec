package main

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

func TestInspectAndUnlockRWLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		readers := []*rwlock.RWMutex{rwlock.New(b.rdb, name), rwlock.New(b.rdb, name)}
		for _, rd := range readers {
			if err := rd.RLock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindRWLock || r.Mode != "read" || len(r.Holders) < 2 {
			t.Errorf("rwlock report with two readers = %+v", r)
		}
		writer := rwlock.New(b.client(), name)
		got := make(chan error, 1)
		go func() { got <- writer.Lock(ctx) }()
		redistest.WaitFor(t, 5*time.Second, func() bool { return b.numSub(keyspace.NewNames(name).WriterChannel()) >= 1 })
		mustRun(t, exitOK, b.args("unlock", "--force", name)...)
		awaitLock(t, got, "waiting writer after unlock --force")
		if r := inspectJSON(t, b.flags, name)[0]; r.Mode != "write" {
			t.Errorf("rwlock report with a writer = %+v", r)
		}
		_ = writer.Unlock(ctx)
		for _, rd := range readers {
			_ = rd.RUnlock(ctx)
		}
	})
}
