package faulttest_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// now is the clock of every recorded history: wall-clock nanoseconds, which
// helper processes on the same machine share with the test.
func now() int64 { return time.Now().UnixNano() }

// never is the return time of an operation whose end nobody saw (a killed
// holder's hold): it may take effect at any time after its call.
const never = math.MaxInt64

// What a client did, as checked against a mutex.
type opKind int

const (
	opAcquire opKind = iota // Lock returned nil
	opRelease               // Unlock returned nil
	opLost                  // the hold ended without an Unlock (expiry, loss, death)
)

type mutexInput struct {
	kind   opKind
	client int
}

// mutexModel is a mutex whose state is the holder (-1: free). A hold ends by
// a release or by loss, which the history records as an operation spanning
// the time in which the hold may have ended.
var mutexModel = porcupine.Model{
	Init: func() any { return -1 },
	Step: func(state, input, _ any) (bool, any) {
		holder, in := state.(int), input.(mutexInput)
		switch in.kind {
		case opAcquire:
			return holder == -1, in.client
		default: // release or loss: only the holder's hold can end
			return holder == in.client, -1
		}
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(mutexInput)
		return fmt.Sprintf("%s(%d)", [...]string{"acquire", "release", "lost"}[in.kind], in.client)
	},
}

// history records operations from several clients and the times faults
// were injected.
type history struct {
	mu     sync.Mutex
	ops    []porcupine.Operation
	faults []int64
}

func (h *history) add(kind opKind, client int, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{
		ClientId: client,
		Input:    mutexInput{kind: kind, client: client},
		Call:     call,
		Return:   ret,
	})
}

// count returns how many operations of kind the history holds.
func (h *history) count(kind opKind) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if op.Input.(mutexInput).kind == kind {
			n++
		}
	}
	return n
}

// fault records that a fault was injected at t.
func (h *history) fault(t int64) {
	h.mu.Lock()
	h.faults = append(h.faults, t)
	h.mu.Unlock()
}

// lossStart is the earliest time a hold acquired at acquired and found lost
// at found can have ended: the last fault injected between the two, or, with
// no fault in between, the acquisition (the lease simply ran out).
func (h *history) lossStart(acquired, found int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := acquired
	for _, f := range h.faults {
		if f > start && f <= found {
			start = f
		}
	}
	return start
}

// check fails t unless the history is linearizable against mutexModel. It
// returns the number of operations checked.
func (h *history) check(t *testing.T) int {
	t.Helper()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(mutexModel, ops, time.Minute)
	if res != porcupine.Ok {
		t.Errorf("history of %d operations is not linearizable as a mutex (%v):\n%s", len(ops), res, describe(ops, info))
	}
	return len(ops)
}

// describe renders the operations in call order, for a failure message.
func describe(ops []porcupine.Operation, _ porcupine.LinearizationInfo) string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	t0 := sorted[0].Call
	for _, op := range sorted {
		ret := "never"
		if op.Return != never {
			ret = fmt.Sprintf("%.1fms", float64(op.Return-t0)/1e6)
		}
		fmt.Fprintf(&b, "  %-12s [%.1fms, %s]\n", mutexModel.DescribeOperation(op.Input, nil), float64(op.Call-t0)/1e6, ret)
	}
	return b.String()
}

// exclusion checks, inside one test process, that no two handles believe
// they hold a lock at once: a handle entering its critical section must
// find every other holder gone or with its Done closed. An exact counter,
// read at entry and compare-and-swapped at exit, catches overlapping
// critical sections that slipped past that check.
type exclusion struct {
	mu      sync.Mutex
	holders map[locker]time.Time // when each current holder entered

	counter    atomic.Int64
	completed  atomic.Int64
	violations atomic.Int64
}

func newExclusion() *exclusion { return &exclusion{holders: make(map[locker]time.Time)} }

// enter records that l holds the lock and returns the counter value read.
func (x *exclusion) enter(t *testing.T, l locker) int64 {
	x.mu.Lock()
	now := time.Now()
	for other, since := range x.holders {
		if done := other.Done(); !isClosed(done) {
			x.violations.Add(1)
			// How late the other's Done closes tells a slow loss timer
			// from a hold that was never lost.
			late := "not within 2s"
			select {
			case <-done:
				late = time.Since(now).String()
			case <-time.After(2 * time.Second):
			}
			t.Errorf("a handle acquired the lock while another still held it (since %v; its Done closed %s later)", now.Sub(since), late)
		}
	}
	x.holders[l] = now
	x.mu.Unlock()
	return x.counter.Load()
}

// leave ends l's critical section started when the counter read v. It
// counts it as completed unless the hold was lost meanwhile.
func (x *exclusion) leave(t *testing.T, l locker, v int64) {
	x.mu.Lock()
	delete(x.holders, l)
	x.mu.Unlock()
	if isClosed(l.Done()) {
		return // lost: its work does not count
	}
	if !x.counter.CompareAndSwap(v, v+1) {
		x.violations.Add(1)
		t.Errorf("counter moved from %d during a critical section: two holders overlapped", v)
		return
	}
	x.completed.Add(1)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
