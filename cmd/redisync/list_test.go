package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// list shows every name in use under a pattern, with its kind, holder and
// TTL, and no name that holds nothing; --limit bounds it and says so.
func TestList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		prefix := redistest.UniqueName(t) + ":"
		rdb := b.client()
		m := rlock.New(rdb, prefix+"orders")
		mustOK(t, m.Lock(ctx))
		defer m.Unlock(ctx)
		mustOK(t, semaphore.New(rdb, prefix+"slots").SetPermits(ctx, 3))
		l := semaphore.NewLeased(rdb, prefix+"workers")
		mustOK(t, l.SetPermits(ctx, 2))
		id, err := l.Acquire(ctx, 0)
		mustOK(t, err)
		defer l.Release(ctx, id)
		if _, err := latch.New(rdb, prefix+"batch").TrySetCount(ctx, 4); err != nil {
			t.Fatal(err)
		}
		stdout, stderr := mustRun(t, exitOK, b.args("list", prefix+"*")...)
		if stderr != "" {
			t.Errorf("stderr: %s", stderr)
		}
		me := fmt.Sprintf("(pid %d on ", os.Getpid())
		for name, want := range map[string][]string{
			"orders":  {"mutex", me},
			"slots":   {"semaphore", "3 available"},
			"workers": {"semaphore (leased)", id, "1 of 2 available"},
			"batch":   {"latch", "count 4"},
		} {
			var row string
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(line, prefix+name+" ") {
					row = line
				}
			}
			for _, w := range want {
				if !strings.Contains(row, w) {
					t.Errorf("row of %s lacks %q: %q\n%s", name, w, row, stdout)
				}
			}
		}
		if rows := strings.Count(stdout, prefix); rows != 4 {
			t.Errorf("%d rows, want 4:\n%s", rows, stdout)
		}
		stdout, stderr = mustRun(t, exitOK, b.args("list", "--limit", "2", prefix+"*")...)
		if rows := strings.Count(stdout, prefix); rows != 2 || !strings.Contains(stderr, "only the first 2") {
			t.Errorf("list --limit 2: %d rows, stderr %q:\n%s", rows, stderr, stdout)
		}
		stdout, _ = mustRun(t, exitOK, b.args("list", "--json", prefix+"o*")...)
		var rs []report
		if err := json.Unmarshal([]byte(stdout), &rs); err != nil || len(rs) != 1 || rs[0].Name != prefix+"orders" || rs[0].Kind != kindMutex {
			t.Errorf("list --json %so* = %+v, %v", prefix, rs, err)
		}
		stdout, _ = mustRun(t, exitOK, b.args("list", prefix+"nothing*")...)
		if !strings.Contains(stdout, "no name in use") {
			t.Errorf("list of nothing says %q", stdout)
		}
	})
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"*", "a:b/c", true}, {"orders:*", "orders:42", true}, {"orders:*", "order", false},
		{"job-?", "job-1", true}, {"job-?", "job-12", false}, {"[ab]x", "bx", true}, {"[^ab]x", "bx", false},
		{"[a-c]*", "cat", true}, {"[a-c]*", "dog", false}, {`a\*`, "a*", true}, {`a\*`, "ab", false},
		{"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false}, {"a}b", "a}b", true},
	} {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}
