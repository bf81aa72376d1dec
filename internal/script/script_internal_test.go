package script

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
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
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(f, "_test.go") {
			for _, m := range regexp.MustCompile(`load\("([^"]+)"\)`).FindAllSubmatch(b, -1) {
				got = append(got, string(m[1]))
			}
		}
	}
	if slices.Sort(got); !slices.Equal(got, files) {
		t.Fatalf("scripts run by wrappers %v, files %v", got, files)
	}
}

// A release's ctx (hold.ReleaseContext: 5s) on a client with go-redis'
// default read timeout (5s) runs on the caller's goroutine; a deadline
// well before the read timeout gets a goroutine of its own, so that its
// caller returns on time (see Process).
func TestOutlasts(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	defer c.Close()
	for _, tc := range []struct {
		within time.Duration
		want   bool
	}{
		{5 * time.Second, false},
		{5*time.Second - time.Millisecond, false},
		{5*time.Second - 10*time.Millisecond, true},
		{500 * time.Millisecond, true},
		{time.Minute, false},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), tc.within)
		if got := outlasts(c, ctx); got != tc.want {
			t.Errorf("outlasts with a deadline in %v = %v, want %v", tc.within, got, tc.want)
		}
		cancel()
	}
	if outlasts(c, t.Context()) {
		t.Error("outlasts without a deadline = true")
	}
	bounded := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0", ContextTimeoutEnabled: true})
	defer bounded.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if outlasts(bounded, ctx) {
		t.Error("outlasts on a client that bounds commands by ctx = true")
	}
}

// TestServerCheckForgottenOnceCollected checks that a client's version
// check, kept for as long as the client lives, goes once the client is
// collected: a process that makes clients and drops them does not grow
// the map of checks.
func TestServerCheckForgottenOnceCollected(t *testing.T) {
	m := miniredis.RunT(t)
	key := func() any {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		defer c.Close()
		_ = CheckServer(t.Context(), c) // answered or refused: settled either way
		k, _ := checkKey(c, false)
		if _, ok := checked.Load(k); !ok {
			t.Fatal("no check kept for a live client")
		}
		return k
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		if _, ok := checked.Load(key); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the check of a collected client is still kept after 10s")
		}
	}
}
