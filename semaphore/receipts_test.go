package semaphore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/exactly"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
	"github.com/redisync/redisync/semaphore"
)

// The lifetime of acquire receipts.

// An Acquire whose reply is lost and whose undo fails goes on under its
// receipt while Redis is out of reach. When Redis answers again after
// longer than ReceiptTTL, the request must find the permit it took, not
// take another one: no permit may be lost, nor taken twice.
func TestAcquireOutlivesReceiptTTL(t *testing.T) {
	srv := redistest.SharedServer(t)
	direct := srv.NewClient(t)
	redistest.LoadScripts(t, direct)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := proxy.NewClient(t)
	faults := redistest.AddScriptFaults(rdb)
	name := redistest.UniqueName(t)
	check := semaphore.New(direct, name)
	if err := check.SetPermits(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	key := keyspace.NewNames(name).Lock()
	dropped := proxy.DropReply(func(args []string) bool {
		if !redistest.IsScriptCall(args, key) {
			return false
		}
		// From now on, every script of the client fails before it is
		// sent: the undo too, and the attempts after it.
		faults.Refuse(true)
		return true
	})

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- semaphore.New(rdb, name).Acquire(ctx, 1) }()
	select {
	case <-dropped:
	case err := <-done:
		t.Fatalf("Acquire returned %v before its reply was dropped", err)
	}
	wantAvailable(t, check, 2) // the lost request took its permit
	elapse(t, direct, name, exactly.ReceiptTTL+time.Second)
	faults.Refuse(false)
	if err := <-done; err != nil {
		t.Fatalf("Acquire after Redis came back = %v", err)
	}
	wantAvailable(t, check, 2)
	mustRelease(t, check, 1)
	wantAvailable(t, check, 3)
}

// elapse makes d pass on the server for the keys of name, as far as their
// expiry goes: a key with less than d to live is deleted, the others live
// d less.
func elapse(t *testing.T, rdb *redis.Client, name string, d time.Duration) {
	t.Helper()
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, keyspace.NewNames(name).Lock()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		switch {
		case err != nil:
			t.Fatal(err)
		case ttl <= 0: // no expiry, or gone already
		case ttl <= d:
			err = rdb.Del(ctx, k).Err()
		default:
			err = rdb.PExpire(ctx, k, ttl-d).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// An acquire receipt lives an hour, but only until its handle knows the
// outcome: the handle's next script deletes it, without a command of its
// own. A receipt deleted by a script that failed is deleted by the next.
func TestAcquireReceiptDeletedMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	ctx := t.Context()
	s := semaphore.New(rdb, "settled")
	if err := s.SetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first round loads the scripts
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		receipts := acquireReceipts(t, rdb, "settled")
		if len(receipts) != 1 {
			t.Fatalf("%d acquire receipts after an Acquire, want 1", len(receipts))
		}
		if ttl := mr.TTL(receipts[0]); ttl < exactly.AcquireReceiptTTL-time.Minute {
			t.Fatalf("acquire receipt lives %v, want %v", ttl, exactly.AcquireReceiptTTL)
		}
		mustRelease(t, s, 1)
		if n := len(acquireReceipts(t, rdb, "settled")); n != 0 {
			t.Fatalf("%d acquire receipts left after Release", n)
		}
	}
	commands := countCommands(rdb)
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, s, 1)
	if n := commands.Load(); n != 2 {
		t.Fatalf("Acquire and Release sent %d commands, want 2: deleting the receipt cost a round trip", n)
	}

	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	faults.Refuse(true)
	if err := s.Release(ctx, 1); err == nil {
		t.Fatal("Release with every script failing succeeded")
	}
	faults.Refuse(false)
	if n := len(acquireReceipts(t, rdb, "settled")); n != 1 {
		t.Fatalf("%d acquire receipts after a failed Release, want 1", n)
	}
	mustRelease(t, s, 1)
	if n := len(acquireReceipts(t, rdb, "settled")); n != 0 {
		t.Fatalf("%d acquire receipts left after a Release following a failed one", n)
	}
	wantAvailable(t, s, 2)
}

// A request whose reply was lost is cancelled, and its receipt, marked
// cancelled, stays for its hour: a copy of the request that reaches Redis
// late (long after ReceiptTTL) finds it and takes nothing.
func TestCancelledReceiptOutlivesLateCopyMini(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	ctx := t.Context()
	s := semaphore.New(rdb, "late")
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	faults.LoseReplies(1)
	if ok, err := s.TryAcquire(ctx, 2); ok || err == nil {
		t.Fatalf("TryAcquire with its reply lost = %v, %v; want an error", ok, err)
	}
	wantAvailable(t, s, 3)
	mustRelease(t, s, 1) // a later script must not delete the receipt
	receipts := acquireReceipts(t, rdb, "late")
	if len(receipts) != 1 {
		t.Fatalf("%d acquire receipts after a cancelled request, want 1", len(receipts))
	}
	mr.FastForward(exactly.ReceiptTTL + time.Second)
	n := keyspace.NewNames("late")
	k := script.SemaphoreKeys{Permits: n.Lock(), Channel: n.Channel()}
	req := script.Request{Receipt: receipts[0], TTL: exactly.AcquireReceiptTTL, Deadline: time.Now().Add(exactly.RequestWindow).UnixMilli()}
	late, err := script.SemaphoreAcquire(ctx, rdb, k, req, 2, nil).Result()
	if err != nil || late.OK || !late.Cancelled {
		t.Fatalf("late copy of the cancelled request = %+v, %v; want it cancelled", late, err)
	}
	wantAvailable(t, s, 4)
}

// acquireReceipts returns the acquire receipt keys of the semaphore name.
func acquireReceipts(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	keys, err := rdb.Keys(t.Context(), keyspace.NewNames(name).ReceiptPrefix(keyspace.ReceiptAcquire)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// countCommands counts the commands rdb sends from now on.
func countCommands(rdb *redis.Client) *atomic.Int64 {
	n := new(atomic.Int64)
	rdb.AddHook(commandCounter{n})
	return n
}

type commandCounter struct{ n *atomic.Int64 }

func (commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
