package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// Fault 6: the reply of an acquire or an unlock is lost after Redis ran the
// script (the proxy drops it and cuts the connection). With go-redis
// retries on, the retried script must change nothing: one Lock is one hold,
// one Unlock releases one level. With retries off, the call fails or
// retries by itself, and leaves nothing behind.
func TestLostReplies(t *testing.T) {
	forEach(t, func(t *testing.T, p primitive) {
		const lease = 30 * time.Second // no renewal runs during a case
		srv := redistest.SharedServer(t)
		direct := srv.NewClient(t)
		proxy := redistest.NewProxy(t, srv.Addr())
		retrying := proxy.NewClient(t) // go-redis default: 3 retries
		single := proxy.NewClient(t, func(o *redis.Options) { o.MaxRetries = -1 })

		exists := func(t *testing.T, name string) bool { return p.held(t.Context(), direct, name) }
		script := func(name string) func([]string) bool {
			return func(args []string) bool { return redistest.IsScriptCall(args, p.key(name)) }
		}
		mustDrop := func(t *testing.T, dropped <-chan struct{}) {
			t.Helper()
			select {
			case <-dropped:
			default:
				t.Fatal("the proxy dropped no reply: the fault was not injected")
			}
		}

		for _, tc := range []struct {
			name string
			rdb  *redis.Client
		}{{"retries on", retrying}, {"retries off", single}} {
			t.Run("acquire/"+tc.name, func(t *testing.T) {
				name := redistest.UniqueName(t)
				l := p.new(tc.rdb, name, lease)
				dropped := proxy.DropReply(script(name))
				if err := l.Lock(t.Context()); err != nil {
					t.Fatalf("Lock with a lost reply: %v", err)
				}
				mustDrop(t, dropped)
				if err := l.Unlock(t.Context()); err != nil {
					t.Fatal(err)
				}
				if exists(t, name) {
					t.Fatal("one Unlock after one Lock left the lock held: the retried acquire added a hold")
				}
			})
			t.Run("unlock/"+tc.name, func(t *testing.T) {
				name := redistest.UniqueName(t)
				l := p.new(tc.rdb, name, lease)
				if err := l.Lock(t.Context()); err != nil {
					t.Fatal(err)
				}
				dropped := proxy.DropReply(script(name))
				err := l.Unlock(t.Context())
				mustDrop(t, dropped)
				if err != nil && tc.rdb == retrying {
					t.Errorf("Unlock with a lost reply and retries on: %v, want nil", err)
				}
				if err != nil && tc.rdb == single {
					t.Logf("Unlock with a lost reply and retries off: %v", err)
					if err := l.Unlock(t.Context()); err != nil {
						t.Errorf("Unlock retried by the caller: %v, want nil", err)
					}
				}
				if exists(t, name) {
					t.Fatal("the lock is still held after Unlock")
				}
				select {
				case <-l.Done():
				case <-time.After(time.Second):
					t.Fatal("Done did not close after the Unlock")
				}
			})
		}

		t.Run("try lock, retries off", func(t *testing.T) {
			type tryLocker interface {
				TryLock(ctx context.Context) (bool, error)
			}
			name := redistest.UniqueName(t)
			l, ok := p.new(single, name, lease).(tryLocker)
			if !ok {
				t.Skip("no TryLock")
			}
			dropped := proxy.DropReply(script(name))
			got, err := l.TryLock(t.Context())
			mustDrop(t, dropped)
			if err == nil || got {
				t.Fatalf("TryLock with a lost reply and no retries = %v, %v; want an error", got, err)
			}
			if exists(t, name) {
				t.Fatal("a failed TryLock left a hold behind")
			}
		})
		// Lost replies at each level of a re-entered hold are the
		// lost-reply table's (TestEveryScriptResent).
	})
}
