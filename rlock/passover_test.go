package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// The bound on how long another process waits holds however many handles
// of one process wait on the lock: a waiter of another process, behind
// them all in the Redis line, holds after at most eight critical sections
// of the process when they are short, two when they are long (past 10ms a
// run of passes ends after its first pass). The release that ends a run
// must name to the script every waiter of the process for the grant to
// pass over: one it leaves out that stands ahead in line is granted the
// lock and begins a fresh run.
func TestManyHandlesOfOneProcessKeepTheBound(t *testing.T) {
	for _, tc := range []struct {
		label   string
		handles int
		section time.Duration // each critical section of the process
		bound   int           // its sections before the other process's waiter
	}{
		{"short", 48, 0, 8},
		{"long", 40, 15 * time.Millisecond, 2},
	} {
		t.Run(tc.label, func(t *testing.T) {
			srv := redistest.SharedServer(t)
			admin := srv.NewClient(t)
			name := redistest.UniqueName(t)
			local, remote, third := srv.NewClient(t), srv.NewClient(t), srv.NewClient(t)
			localParks, remoteParks := redistest.CountParks(t, local), redistest.CountParks(t, remote)
			// The first holder is of a third process, so that the process's
			// first run begins with the grant to its first waiter.
			first := rlock.New(third, name)
			mustLock(t, first)

			var mu sync.Mutex
			var order []string // who held, in order: "p" the process, "q" the other
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			hold := func(who string, m *rlock.Mutex, got <-chan error) {
				wg.Go(func() {
					if err := <-got; err != nil {
						t.Errorf("%s: Lock: %v", who, err)
						return
					}
					mu.Lock()
					order = append(order, who)
					mu.Unlock()
					time.Sleep(tc.section)
					if err := m.Unlock(context.Background()); err != nil {
						t.Errorf("%s: Unlock: %v", who, err)
					}
				})
			}
			for i := range tc.handles {
				m := rlock.New(local, name)
				hold("p", m, lockParked(t, ctx, m, localParks, int64(i+1)))
			}
			q := rlock.New(remote, name)
			hold("q", q, lockParked(t, ctx, q, remoteParks, 1))
			mustUnlock(t, first)
			wg.Wait()

			mu.Lock()
			defer mu.Unlock()
			before := -1
			for i, who := range order {
				if who == "q" {
					before = i
					break
				}
			}
			switch {
			case t.Failed():
			case before < 0:
				t.Fatalf("the other process's waiter never held; order %v", order)
			case before > tc.bound:
				t.Errorf("the other process's waiter held after %d critical sections of the process, want at most %d (%d handles waiting)",
					before, tc.bound, tc.handles)
			}
			t.Logf("%d handles waiting, sections of %v: the other process's waiter held after %d of the process's", tc.handles, tc.section, before)
			assertNoKeys(t, admin, name)
		})
	}
}
