package rwlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// A Lock or RLock that waits behind a hold of its own handle, its ctx
// carrying no hold, says so when its ctx ends, and what to do instead.
func TestWaitBehindOwnHoldSaysSoMini(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hold, free func(t testing.TB, rw *rwlock.RWMutex)
		then       func(rw *rwlock.RWMutex, ctx context.Context) error
		want       string
	}{
		{"Lock after Lock", mustLock, mustUnlock, (*rwlock.RWMutex).Lock,
			"this handle holds the lock: a call whose ctx carries no hold waits for its Unlock"},
		{"Lock after RLock", mustRLock, mustRUnlock, (*rwlock.RWMutex).Lock,
			"this handle holds a read lock: a Lock waits for its RUnlock"},
		{"RLock after Lock", mustLock, mustUnlock, (*rwlock.RWMutex).RLock,
			"this handle holds the write lock: an RLock whose ctx carries no hold waits for its Unlock; to downgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rdb := redistest.Mini(t)
			rw := rwlock.New(rdb, redistest.UniqueName(t))
			tc.hold(t, rw)
			defer tc.free(t, rw)
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			err := tc.then(rw, ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s = %v; want the deadline, saying %q", tc.name, err, tc.want)
			}
		})
	}
}
