package rlock_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// The owner id in Redis names the holding process, and a hold taken over
// (its lease ran out unseen, say in a pause, and another handle took the
// lock) is lost with an error that says by whom.
func TestLossNamesWhoTookOverMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	name := redistest.UniqueName(t)
	lost := make(chan error, 1)
	a := rlock.New(rdb, name, rlock.WithWatchdogTimeout(300*time.Millisecond),
		rlock.WithOnLost(func(err error) { lost <- err }))
	mustLock(t, a)
	key := internal.NewNames(name).Lock()
	rdb.Del(t.Context(), key) // its lease ran out, as far as Redis knows
	b := rlock.New(rdb, name)
	mustLock(t, b)
	defer mustUnlock(t, b)
	var holder string
	for _, f := range rdb.HKeys(t.Context(), key).Val() {
		if !strings.HasPrefix(f, "@") {
			holder = f
		}
	}
	if o, ok := internal.ParseOwner(holder); !ok || o.PID != os.Getpid() {
		t.Fatalf("owner id %q names no process, or not this one (%d)", holder, os.Getpid())
	}
	select {
	case err := <-lost:
		want := fmt.Sprintf("taken over: it is held by pid %d on ", os.Getpid())
		if !errors.Is(err, rlock.ErrLost) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), holder) {
			t.Fatalf("loss = %v; want ErrLost saying %q and %q", err, want, holder)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the hold taken over was not reported lost")
	}
}
