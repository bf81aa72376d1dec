package faulttest_test

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The checker must reject what a broken lock would produce, or the
// linearizability tests prove nothing.
func TestMutexModel(t *testing.T) {
	op := func(kind opKind, client int, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: mutexInput{kind: kind, client: client}, Call: call, Return: ret}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"handoff", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opRelease, 0, 2, 3), op(opAcquire, 1, 1, 4),
		}, true},
		{"two holders", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opAcquire, 1, 2, 3), op(opRelease, 0, 4, 5),
		}, false},
		{"loss seen after the next acquire", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opLost, 0, 2, 6), op(opAcquire, 1, 3, 4),
		}, true},
		{"loss that cannot precede the next acquire", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opLost, 0, 5, 6), op(opAcquire, 1, 3, 4),
		}, false},
		{"killed holder, never seen again", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opLost, 0, 2, never), op(opAcquire, 1, 3, 4), op(opRelease, 1, 5, 6),
		}, true},
		{"release by a non-holder", []porcupine.Operation{
			op(opAcquire, 0, 0, 1), op(opRelease, 1, 2, 3),
		}, false},
	} {
		if got := porcupine.CheckOperations(mutexModel, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
