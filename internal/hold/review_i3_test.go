package hold_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/redistest"
)

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

// Every level the fake Redis holds for the handle is held by the current
// hold's holders (under the tag Redis has), or owed, exactly once, after
// every call of a random sequence (I3).
func TestRedisLevelsHeldOrOwed(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rapid.Check(t, func(rt *rapid.T) {
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
			"lose": func(*rapid.T) {
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
					return
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
}
