package faulttest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// event is one step of a churning client, in the history's clock.
type event struct {
	kind opKind
	// For acquire and release: when the call was made and returned. For a
	// loss: when the hold was acquired (call) and found lost (ret, or never
	// when nobody could tell).
	call, ret int64
	unlocking bool // an Unlock was called at call; its outcome follows
}

// unlockTimeout bounds one Unlock attempt of a churning client.
const unlockTimeout = 2 * time.Second

// churn makes l take and give back the lock until ctx ends, holding it for
// up to maxHold each time, and reports every step. It returns once ctx is
// done and no hold is left.
func churn(ctx context.Context, l locker, notHeld func(error) bool, maxHold time.Duration, report func(event)) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		call := now()
		if err := l.Lock(ctx); err != nil {
			// Redis unreachable, or ctx over: a failed Lock holds nothing.
			timer.Reset(20 * time.Millisecond)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
			continue
		}
		acquired := now()
		report(event{kind: opAcquire, call: call, ret: acquired})
		timer.Reset(time.Duration(rand.Int64N(int64(maxHold) + 1)))
		select {
		case <-timer.C:
		case <-l.Done():
		case <-ctx.Done():
		}
		if isClosed(l.Done()) {
			report(event{kind: opLost, call: acquired, ret: now()})
			_ = unlockOnce(l) // tidy up; the hold is no longer believed in
			continue
		}
		ucall := now()
		report(event{unlocking: true, call: ucall})
		err := unlockRetry(l, notHeld)
		switch {
		case err == nil:
			report(event{kind: opRelease, call: ucall, ret: now()})
		case notHeld(err):
			report(event{kind: opLost, call: acquired, ret: now()})
		default:
			report(event{kind: opLost, call: acquired, ret: never})
		}
	}
}

func unlockOnce(l locker) error {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	return l.Unlock(ctx)
}

// unlockRetry retries Unlock while its outcome is unknown (Redis down or
// paused), a few times.
func unlockRetry(l locker, notHeld func(error) bool) error {
	var err error
	for range 3 {
		if err = unlockOnce(l); err == nil || notHeld(err) {
			return err
		}
	}
	return err
}

// runChurners runs n churning clients in this process, each with its own
// Redis client from newClient, records their steps in h and returns when
// ctx ends.
func runChurners(ctx context.Context, t *testing.T, p primitive, n int, newClient func(i int) redis.UniversalClient, name string, lease, maxHold time.Duration, h *history) {
	var wg sync.WaitGroup
	for i := range n {
		rdb := newClient(i)
		wg.Go(func() {
			l := p.new(rdb, name, lease)
			churn(ctx, l, p.notHeld, maxHold, func(e event) { h.record(i, e) })
		})
	}
	wg.Wait()
}

// record adds an in-process client's event to the history.
func (h *history) record(client int, e event) {
	switch {
	case e.unlocking:
	case e.kind == opLost:
		h.add(opLost, client, h.lossStart(e.call, e.ret), e.ret)
	default:
		h.add(e.kind, client, e.call, e.ret)
	}
}

// Helper processes.

// helperArgs are the arguments of the "hold" and "churn" helpers:
// primitive name, Redis address, lock name, lease.
func helperArgs(p primitive, addr, name string, lease time.Duration) []string {
	return []string{p.name, addr, name, lease.String()}
}

func parseHelperArgs(args []string) (primitive, *redis.Client, string, time.Duration, error) {
	if len(args) != 4 {
		return primitive{}, nil, "", 0, fmt.Errorf("want 4 arguments, got %q", args)
	}
	p, ok := primitiveNamed(args[0])
	if !ok {
		return primitive{}, nil, "", 0, fmt.Errorf("unknown primitive %q", args[0])
	}
	lease, err := time.ParseDuration(args[3])
	if err != nil {
		return primitive{}, nil, "", 0, err
	}
	return p, redis.NewClient(&redis.Options{Addr: args[1]}), args[2], lease, nil
}

// helperHold takes the lock, writes "held", then waits: on the input line
// "unlock" it unlocks and writes "unlocked"; it exits when its input ends.
// Tests SIGKILL it while it holds the lock.
func helperHold(ctx context.Context, args []string, in <-chan string) error {
	p, rdb, name, lease, err := parseHelperArgs(args)
	if err != nil {
		return err
	}
	defer rdb.Close()
	l := p.new(rdb, name, lease)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := l.Lock(lctx); err != nil {
		return err
	}
	fmt.Println("held")
	for line := range in {
		if line == "unlock" {
			if err := unlockOnce(l); err != nil {
				return err
			}
			fmt.Println("unlocked")
		}
	}
	return nil
}

// helperChurn churns on the lock until its input ends, writing one line
// per step: "A call ret", "R call ret", "L acquired found" (found is -1 for
// never) and "U call" when an Unlock starts.
func helperChurn(ctx context.Context, args []string, _ <-chan string) error {
	p, rdb, name, lease, err := parseHelperArgs(args)
	if err != nil {
		return err
	}
	defer rdb.Close()
	churn(ctx, p.new(rdb, name, lease), p.notHeld, 100*time.Millisecond, func(e event) {
		switch {
		case e.unlocking:
			fmt.Printf("U %d\n", e.call)
		case e.kind == opAcquire:
			fmt.Printf("A %d %d\n", e.call, e.ret)
		case e.kind == opRelease:
			fmt.Printf("R %d %d\n", e.call, e.ret)
		default:
			ret := e.ret
			if ret == never {
				ret = -1
			}
			fmt.Printf("L %d %d\n", e.call, ret)
		}
	})
	return nil
}

// churnProc is a churn helper process seen from the test: it turns the
// helper's lines into history operations, and its death into a loss.
type churnProc struct {
	id   int
	h    *redistest.Helper
	done chan struct{} // closed when all lines were read

	mu        sync.Mutex
	holding   bool  // between an "A" and its outcome
	acquired  int64 // when the current hold was acquired
	unlocking int64 // when an Unlock of the current hold started; 0: none
}

func startChurnProc(t *testing.T, p primitive, id int, addr, name string, lease time.Duration, hist *history) *churnProc {
	c := &churnProc{id: id, done: make(chan struct{})}
	c.h = redistest.StartHelper(t, "churn", helperArgs(p, addr, name, lease)...)
	go func() {
		defer close(c.done)
		for line := range c.h.Lines() {
			if err := c.apply(line, hist); err != nil {
				t.Errorf("churn helper %d: %v", id, err)
			}
		}
	}()
	return c
}

func (c *churnProc) apply(line string, hist *history) error {
	f := strings.Fields(line)
	nums := make([]int64, len(f)-1)
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("bad line %q", line)
		}
		nums[i] = n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case f[0] == "A" && len(nums) == 2:
		c.holding, c.acquired, c.unlocking = true, nums[1], 0
		hist.add(opAcquire, c.id, nums[0], nums[1])
	case f[0] == "U" && len(nums) == 1:
		c.unlocking = nums[0]
	case f[0] == "R" && len(nums) == 2:
		c.holding = false
		hist.add(opRelease, c.id, nums[0], nums[1])
	case f[0] == "L" && len(nums) == 2:
		c.holding = false
		ret := nums[1]
		if ret < 0 {
			ret = never
		}
		hist.add(opLost, c.id, hist.lossStart(nums[0], ret), ret)
	default:
		return fmt.Errorf("bad line %q", line)
	}
	return nil
}

// isHolding reports whether the helper last said it acquired the lock.
func (c *churnProc) isHolding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holding && c.unlocking == 0
}

// kill SIGKILLs the helper and records what its death means: a hold it had
// ends some time after the kill (when its lease runs out).
func (c *churnProc) kill(hist *history) {
	at := now()
	hist.fault(at)
	c.h.Kill()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding {
		return
	}
	start := at
	if c.unlocking != 0 {
		start = c.unlocking // released or expired, some time after this
	}
	hist.add(opLost, c.id, start, never)
	c.holding = false
}
