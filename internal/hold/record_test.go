package hold_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// recLock is a read-write lock in memory behind a hold.Lock, keyed by hold
// id as the real scripts are: one level of each mode per id, the read
// level tagged. Its releases can be made to fail.
type recLock struct {
	mu   sync.Mutex
	held map[string]*[2]bool
	tags map[string]uint64
	fail []fakeFail // consumed one per release or give-back
}

func (f *recLock) levels(id string) hold.Levels {
	var lv hold.Levels
	if h := f.held[id]; h != nil {
		for m, in := range h {
			if in {
				lv[m] = 1
			}
		}
	}
	return lv
}

func (f *recLock) kind(rdb redis.UniversalClient, name string) hold.Kind {
	return hold.Kind{
		Base:    hold.NewBase("mem", rdb, name),
		Keeping: hold.Keeping{WatchdogTimeout: time.Minute},
		Modes:   2,
		Channel: func(hold.Mode) string { return "mem:" + name },
		Acquire: func(_ context.Context, m hold.Mode, a hold.Asking) (hold.Grant, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			for id, h := range f.held {
				if id != a.ID && (h[hold.Exclusive] || m == hold.Exclusive && h[hold.Shared]) {
					return hold.Grant{Wait: time.Millisecond}, nil
				}
			}
			if f.held[a.ID] == nil {
				f.held[a.ID] = new([2]bool)
			}
			f.held[a.ID][m] = true
			if m == hold.Shared {
				f.tags[a.ID] = a.Seq
			}
			return hold.Grant{OK: true, Levels: f.levels(a.ID)}, nil
		},
		Release: func(_ context.Context, m hold.Mode, id string, tag uint64, _ bool) (hold.Released, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			var ff fakeFail
			if len(f.fail) > 0 {
				ff, f.fail = f.fail[0], f.fail[1:]
			}
			if ff.err != nil && !ff.run {
				return hold.Released{}, ff.err
			}
			h := f.held[id]
			if h == nil || !h[m] || m == hold.Shared && f.tags[id] != tag {
				return hold.Released{NotHeld: true}, ff.err
			}
			h[m] = false
			out := hold.Released{Levels: f.levels(id)}
			if !h[hold.Exclusive] && !h[hold.Shared] {
				delete(f.held, id)
			}
			return out, ff.err
		},
		Renew: func(_ context.Context, _ redis.Scripter, id string) func() (bool, error) {
			return func() (bool, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.held[id] != nil, nil
			}
		},
		ForceUnlock: func(context.Context, string, []any) (int64, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			clear(f.held)
			return script.ForceDeleted, nil
		},
	}
}

// snapshot copies the levels and the read tags the fake Redis holds.
func (f *recLock) snapshot() (map[string][2]bool, map[string]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	held := map[string][2]bool{}
	for id, h := range f.held {
		held[id] = *h
	}
	tags := map[string]uint64{}
	for id, tag := range f.tags {
		tags[id] = tag
	}
	return held, tags
}

// After every call of a random sequence of takes, re-entries, downgrades,
// releases, failed releases, losses found later or reported by the
// watchdog, and ForceUnlocks: the handle's current hold has a level of a
// mode exactly when one of its holders has it (a record, a read, or the
// handed mark), so the count can be derived from the holders; and every
// level the fake Redis holds for the handle is held by the current hold's
// holders (under the tag Redis has), or owed, exactly once (I3).
func TestLevelsFollowHolders(t *testing.T) {
	_, rdb := redistest.Mini(t)
	runs := 0
	rapid.Check(t, func(rt *rapid.T) {
		runs++
		f := &recLock{held: map[string]*[2]bool{}, tags: map[string]uint64{}}
		l := hold.NewLock(f.kind(rdb, t.Name()+":"+time.Now().Format("150405.000000")))
		defer l.Tracker().Drop()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		mode := rapid.SampledFrom([]hold.Mode{hold.Exclusive, hold.Shared})
		check := func(after string) {
			if err := l.CheckRecord(); err != nil {
				rt.Fatalf("after %s: %v", after, err)
			}
			held, tags := f.snapshot()
			if err := l.Tracker().CheckRedis(held, tags); err != nil {
				rt.Fatalf("after %s: %v", after, err)
			}
		}
		faults := map[string]func(*rapid.T){
			"lose": func(*rapid.T) { // the lease ran out unseen
				f.mu.Lock()
				clear(f.held)
				f.mu.Unlock()
			},
			"watchdogLoss": func(*rapid.T) { l.Tracker().LoseNow() },
			"failRelease": func(rt *rapid.T) {
				ff := rapid.SampledFrom([]fakeFail{{err: replyErr("ERR boom")}, {run: true, err: replyErr("ERR boom")}, {run: true, err: errLostReply}}).Draw(rt, "fail")
				f.mu.Lock()
				f.fail = append(f.fail, ff)
				f.mu.Unlock()
			},
			"force": func(*rapid.T) { _, _ = l.ForceUnlock(ctx) },
		}
		steps := map[string]func(*rapid.T){
			"tryLock": func(rt *rapid.T) { _, _ = l.TryLock(ctx, mode.Draw(rt, "m")) },
			"unlock":  func(rt *rapid.T) { _ = l.Unlock(ctx, mode.Draw(rt, "m")) },
			"do": func(rt *rapid.T) {
				m := mode.Draw(rt, "m")
				if !l.GateFree(m) {
					return // a Do would wait for the handle's own holds
				}
				_ = l.Do(ctx, m, func(ctx context.Context) error {
					check("Do's take")
					for range rapid.IntRange(0, 4).Draw(rt, "inner") {
						switch op := rapid.SampledFrom([]string{"reenter", "downgrade", "unlock", "runlock", "lose", "watchdogLoss", "failRelease", "force"}).Draw(rt, "op"); op {
						case "reenter":
							_, _ = l.TryLock(ctx, m)
						case "downgrade":
							_, _ = l.TryLock(ctx, hold.Shared)
						case "unlock":
							_ = l.Unlock(ctx, m)
						case "runlock":
							_ = l.Unlock(context.WithoutCancel(t.Context()), hold.Shared)
						default:
							faults[op](rt)
						}
						check("Do's inner step")
					}
					return nil
				})
			},
			"": func(*rapid.T) { check("the step") },
		}
		for name, fault := range faults {
			steps[name] = fault
		}
		rt.Repeat(steps)
	})
	if runs == 0 {
		t.Fatal("no run")
	}
}
