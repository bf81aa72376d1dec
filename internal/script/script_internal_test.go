package script

import (
	"io/fs"
	"slices"

	"github.com/redisync/redisync/lua"
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

// Every .lua file of package lua is run by a wrapper, and every wrapper's
// file exists (load panics otherwise, at package init).
func TestEveryScriptLoaded(t *testing.T) {
	files, err := fs.Glob(lua.Scripts, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if got := Loaded(); !slices.Equal(got, files) {
		t.Fatalf("scripts run by wrappers %v, files %v", got, files)
	}
}
