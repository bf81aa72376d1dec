package fairlock_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
)

// A hold taken over (its lease ran out unseen, and another handle took the
// lock) is lost with an error that names the new holder's process.
func TestLossNamesWhoTookOverMini(t *testing.T) {
	_, rdb := redistest.Mini(t)
	name := redistest.UniqueName(t)
	lost := make(chan error, 1)
	a := fairlock.New(rdb, name, fairlock.WithWatchdogTimeout(300*time.Millisecond),
		fairlock.WithOnLost(func(err error) { lost <- err }))
	mustLock(t, a)
	key := internal.NewNames(name).Lock()
	rdb.Del(t.Context(), key) // its lease ran out, as far as Redis knows
	b := fairlock.New(rdb, name)
	mustLock(t, b)
	defer mustUnlock(t, b)
	var holder string
	for _, f := range rdb.HKeys(t.Context(), key).Val() {
		if !strings.HasPrefix(f, "@") {
			holder = f
		}
	}
	select {
	case err := <-lost:
		want := fmt.Sprintf("taken over: it is held by pid %d on ", os.Getpid())
		if !errors.Is(err, fairlock.ErrLost) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), holder) {
			t.Fatalf("loss = %v; want ErrLost saying %q and %q", err, want, holder)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the hold taken over was not reported lost")
	}
}
