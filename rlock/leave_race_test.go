package rlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// scriptHook runs, for a script of a given SHA, before before it is sent
// and after once it has been answered, before the caller reads the reply.
type scriptHook map[string]hookFuncs

type hookFuncs struct{ before, after func() }

func (scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		var args []string
		for _, a := range cmd.Args() {
			s, _ := a.(string)
			args = append(args, s)
		}
		var f hookFuncs
		for sha, hf := range h {
			if redistest.RunsScript(args, sha) {
				f = hf
			}
		}
		if f.before != nil {
			f.before()
		}
		err := next(ctx, cmd)
		if f.after != nil {
			f.after()
		}
		return err
	}
}

func (scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A wait that gives up as a release grants it the lock leaves the line in
// the background, and gives the grant back. A TryLock of the same handle
// may run meanwhile (the wait has returned and let go of the handle's
// local line): when it runs between the leave and the give-back, it takes
// the granted level as its own, and the give-back, which names the wait's
// last attempt, must leave that hold alone, not release it under the
// TryLock that reported it held.
func TestLeaveGiveBackSparesConcurrentTryLock(t *testing.T) {
	mr, plain := redistest.Mini(t)
	name := redistest.UniqueName(t)
	hooked := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = hooked.Close() })
	a, b := rlock.New(hooked, name), rlock.New(plain, name)
	mustLock(t, b)

	var armed atomic.Bool
	tryRan, tried := make(chan struct{}), make(chan error, 1)
	gaveBack := make(chan struct{})
	var leaving, onceTry, onceBack atomic.Bool
	hooked.AddHook(scriptHook{
		redistest.ScriptSHA(t, "rlock_leave.lua"): {
			// The wait has given up: b's release grants a the lock
			// before its leave runs, so that the leave reports a grant.
			before: func() {
				if !leaving.Swap(true) {
					if err := b.Unlock(context.Background()); err != nil {
						t.Error(err)
					}
				}
			},
			// The leave has run: a TryLock of the handle runs its
			// script before the give-back.
			after: func() {
				if armed.Swap(true) {
					return
				}
				go func() {
					for {
						ok, err := a.TryLock(context.Background())
						if ok || err != nil {
							tried <- err
							return
						}
						time.Sleep(time.Millisecond) // the gate is still the wait's
					}
				}()
				select {
				case <-tryRan:
				case <-time.After(5 * time.Second):
					t.Error("the TryLock's script did not run")
				}
			},
		},
		// The TryLock's script has run; its caller reads the reply only
		// after the give-back, if any.
		redistest.ScriptSHA(t, "rlock_acquire.lua"): {after: func() {
			if !armed.Load() || onceTry.Swap(true) {
				return
			}
			close(tryRan)
			select {
			case <-gaveBack:
			case <-time.After(2 * time.Second): // none came
			}
		}},
		redistest.ScriptSHA(t, "rlock_unlock.lua"): {after: func() {
			if armed.Load() && !onceBack.Swap(true) {
				close(gaveBack)
			}
		}},
	})

	// a waits in line behind b and gives up.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := a.Lock(ctx); err == nil {
		t.Fatal("a's Lock took a held lock")
	}

	select {
	case err := <-tried:
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leave never ran, or the TryLock never returned")
	}
	if !perclient.AwaitTidied(t.Context()) {
		t.Fatal("clean-ups still running")
	}
	if held, err := a.IsHeld(t.Context()); !held || err != nil {
		t.Fatalf("after a TryLock that reported the lock taken, IsHeld = %v, %v: the wait's give-back released it", held, err)
	}
	if ok, err := b.TryLock(t.Context()); ok || err != nil {
		t.Fatalf("another handle's TryLock while a holds = %v, %v", ok, err)
	}
	mustUnlock(t, a)
}
