package observe_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/observe"
	"github.com/redisync/redisync/rlock"
)

// wrapped is a client type the registry does not know.
type wrapped struct{ *redis.Client }

// nop is an Observer that hears nothing.
type nop struct{ observe.Nop }

func TestAttach(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	if observe.Of(rdb) != nil {
		t.Fatal("Of: an observer before Attach")
	}
	o := &nop{}
	if err := observe.Attach(rdb, o); err != nil {
		t.Fatal(err)
	}
	if got := observe.Of(rdb); got != o {
		t.Fatalf("Of = %v, want the attached observer", got)
	}
	if err := observe.Attach(rdb, nop{}); !errors.Is(err, observe.ErrAttached) {
		t.Fatalf("second Attach = %v, want ErrAttached", err)
	}
	other := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer other.Close()
	if observe.Of(other) != nil {
		t.Fatal("Of: another client has the observer too")
	}
	if err := observe.Attach(nil, o); err == nil {
		t.Fatal("Attach(nil) succeeded")
	}
	if err := observe.Attach(wrapped{rdb}, o); err == nil {
		t.Fatal("Attach of an unknown client type succeeded")
	}
}

// Of on the path of every acquire allocates nothing, observed or not.
func TestOfAllocatesNothing(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	if n := testing.AllocsPerRun(100, func() { observe.Of(rdb) }); n != 0 {
		t.Errorf("Of without an observer: %v allocations", n)
	}
	if err := observe.Attach(rdb, nop{}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { observe.Of(rdb) }); n != 0 {
		t.Errorf("Of with an observer: %v allocations", n)
	}
}

// The registry holds a client weakly: an observed client that was used
// and dropped is collected.
func TestClientCollected(t *testing.T) {
	srv := redistest.SharedServer(t)
	collected := make(chan struct{})
	func() {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rdb.Close()
		if err := observe.Attach(rdb, nop{}); err != nil {
			t.Fatal(err)
		}
		m := rlock.New(rdb, redistest.UniqueName(t))
		if err := m.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(rdb, func(c chan struct{}) { close(c) }, collected)
	}()
	redistest.WaitFor(t, 15*time.Second, func() bool {
		runtime.GC()
		select {
		case <-collected:
			return true
		default:
			return false
		}
	})
}

// heldOnly hears only of holds ending; Nop takes every other report.
type heldOnly struct {
	observe.Nop
	held chan time.Duration
}

func (h heldOnly) Held(_ observe.Op, d time.Duration) { h.held <- d }

func TestNopEmbedded(t *testing.T) {
	_, rdb := redistest.Mini(t)
	o := heldOnly{held: make(chan time.Duration, 1)}
	if err := observe.Attach(rdb, o); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	m := rlock.New(rdb, "nop")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-o.held:
		if d <= 0 {
			t.Fatalf("Held(%v), want a positive duration", d)
		}
	default:
		t.Fatal("Held was not called for the hold that ended")
	}
}
