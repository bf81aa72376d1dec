package rwlock_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A hold taken over (its lease ran out unseen, and another handle took the
// lock) is lost with an error that names the new holder's process and
// how it holds: a writer, else a reader.
func TestLossNamesWhoTookOverMini(t *testing.T) {
	for _, tc := range []struct {
		mode string
		take func(t testing.TB, rw *rwlock.RWMutex)
		free func(t testing.TB, rw *rwlock.RWMutex)
	}{
		{"writing", mustLock, mustUnlock},
		{"reading", mustRLock, mustRUnlock},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, rdb := redistest.Mini(t)
			name := redistest.UniqueName(t)
			lost := make(chan error, 1)
			a := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(300*time.Millisecond),
				rwlock.WithOnLost(func(err error) { lost <- err }))
			mustLock(t, a)
			rdb.Del(t.Context(), lockKey(name)) // its lease ran out, as far as Redis knows
			b := rwlock.New(rdb, name)
			tc.take(t, b)
			defer tc.free(t, b)
			select {
			case err := <-lost:
				want := fmt.Sprintf("taken over: it is held for %s by pid %d on ", tc.mode, os.Getpid())
				if !errors.Is(err, rwlock.ErrLost) || !strings.Contains(err.Error(), want) {
					t.Fatalf("loss = %v; want ErrLost saying %q", err, want)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the hold taken over was not reported lost")
			}
		})
	}
}
