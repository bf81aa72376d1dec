package lua

import (
	"testing"
	"time"
)

func TestPTTL(t *testing.T) {
	for v, want := range map[int64]time.Duration{-2: 0, -1: 0, 0: time.Millisecond, 1500: 1500 * time.Millisecond} {
		if got := pttl(v); got != want {
			t.Errorf("pttl(%d) = %v, want %v", v, got, want)
		}
	}
}
