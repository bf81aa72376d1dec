package faulttest_test

import (
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// The latch rows of the lost-reply table. Each row ends with the latch at
// zero, so its count key must be gone; the receipts its calls wrote live
// ten seconds, longer than the table waits for leftovers, so the row
// deletes them.

func init() {
	for file, row := range map[string]func(t *testing.T, r resend){
		"latch_trysetcount.lua": func(t *testing.T, r resend) {
			dropped := r.drop()
			ok, err := latch.New(r.via, r.name).TrySetCount(t.Context(), 4)
			mustDropped(t, dropped)
			if !ok || err != nil {
				t.Fatalf("TrySetCount on a latch at zero with a lost reply = %v, %v; want true", ok, err)
			}
			wantLatch(t, r, 4)
			if ok, err := latch.New(r.direct, r.name).Delete(t.Context()); !ok || err != nil {
				t.Fatal(ok, err)
			}
		},
		"latch_countdown.lua": func(t *testing.T, r resend) {
			ctx := t.Context()
			setLatch(t, r, 2)
			dropped := r.drop()
			if err := latch.New(r.via, r.name).CountDown(ctx); err != nil {
				t.Fatalf("CountDown with a lost reply: %v", err)
			}
			mustDropped(t, dropped)
			wantLatch(t, r, 1)

			// The step to zero with a lost reply still wakes a waiter,
			// whose poll interval is a minute.
			waited := make(chan error, 1)
			go func() {
				waited <- latch.New(r.direct, r.name, latch.WithPollInterval(time.Minute)).Wait(ctx)
			}()
			ch := keyspace.NewNames(r.name).LatchChannel()
			redistest.WaitFor(t, 10*time.Second, func() bool { return redistest.NumSub(t, r.direct, ch) == 1 })
			dropped = r.drop()
			if err := latch.New(r.via, r.name).CountDown(ctx); err != nil {
				t.Fatalf("the last CountDown with a lost reply: %v", err)
			}
			mustDropped(t, dropped)
			select {
			case err := <-waited:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter was not woken by the step to zero")
			}
			wantLatch(t, r, 0)
		},
		"latch_delete.lua": func(t *testing.T, r resend) {
			setLatch(t, r, 3)
			dropped := r.drop()
			ok, err := latch.New(r.via, r.name).Delete(t.Context())
			mustDropped(t, dropped)
			if !ok || err != nil {
				t.Fatalf("Delete with a lost reply = %v, %v; want true", ok, err)
			}
			wantLatch(t, r, 0)
		},
	} {
		lostReplyRows[file] = func(t *testing.T, r resend) {
			row(t, r)
			if n := r.direct.Exists(t.Context(), keyspace.NewNames(r.name).Latch()).Val(); n != 0 {
				t.Fatal("the latch's count key outlived zero")
			}
			keys, _ := r.direct.Keys(t.Context(), "*{"+r.name+"}*").Result()
			if len(keys) > 0 {
				r.direct.Del(t.Context(), keys...) // receipts: they expire by themselves
			}
		}
	}
}

func setLatch(t *testing.T, r resend, n int64) {
	t.Helper()
	if ok, err := latch.New(r.direct, r.name).TrySetCount(t.Context(), n); !ok || err != nil {
		t.Fatalf("TrySetCount(%d) = %v, %v", n, ok, err)
	}
}

// wantLatch fails t unless the latch's count is want: the operation
// applied exactly once.
func wantLatch(t *testing.T, r resend, want int64) {
	t.Helper()
	if n, err := latch.New(r.direct, r.name).Count(t.Context()); n != want || err != nil {
		t.Fatalf("Count = %d, %v; want %d (applied other than once)", n, err, want)
	}
}
