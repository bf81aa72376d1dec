package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every scenario briefly, so that a change that breaks one
// shows up in go test rather than in the next full run.
func TestSmoke(t *testing.T) {
	cfg := config{
		uncontended: 100 * time.Millisecond, many: 200 * time.Millisecond,
		handoff: 0, handoffN: 3,
		window: 200 * time.Millisecond, warmup: 50 * time.Millisecond,
		holds: 200, wdTimeout: 300 * time.Millisecond, periods: 1,
		waiters: 200, waitLocks: 20,
		clusterN: []int{20}, clusterRuns: 1, clusterTimeout: time.Minute,
		latchWaiters: 100, latchRounds: 2,
		page: filepath.Join(t.TempDir(), "benchmarks.md"),
	}
	var out bytes.Buffer
	err := run(t.Context(), cfg, &out)
	if errors.Is(err, errNoServer) && os.Getenv("REDISYNC_REQUIRE_REDIS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, s := range scenarios {
		if optIn[s.name] {
			continue
		}
		if !strings.Contains(out.String(), "("+s.name+": ") {
			t.Errorf("scenario %s printed no table", s.name)
		}
	}
	if !strings.Contains(out.String(), "### Targets") {
		t.Error("no targets table")
	}
	page, err := os.ReadFile(cfg.page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## This run", "## Summary", "handoff to a parked waiter", "### 2. Handoff"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	t.Log(out.String())
}

// TestFeatures runs the opt-in features scenario briefly on the server
// REDISYNC_SERVER names, writing its section into a page, twice: the
// second run replaces the server's part, and a later -page run keeps the
// section.
func TestFeatures(t *testing.T) {
	page := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(page, []byte("# Benchmarks\n\n## Results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config{run: "^features$", uncontended: 50 * time.Millisecond, featureRuns: 2, section: page}
	for range 2 {
		var out bytes.Buffer
		err := run(t.Context(), cfg, &out)
		if errors.Is(err, errNoServer) && os.Getenv("REDISYNC_REQUIRE_REDIS") != "1" {
			t.Skip(err)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		t.Log(out.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, sectionHead+"\n"); n != 1 {
		t.Errorf("%d sections, want 1:\n%s", n, text)
	}
	if n := strings.Count(text, serverMark); n != 1 {
		t.Errorf("%d server parts after two runs on one server, want 1:\n%s", n, text)
	}
	if !strings.Contains(text, "### Server features on ") || !strings.Contains(text, featuresCommand) {
		t.Errorf("section lacks its table or command:\n%s", text)
	}
	if err := writePage(page, pageData{when: time.Now()}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(page)
	if !strings.Contains(string(b), sectionOf(text)) {
		t.Errorf("-page dropped the section:\n%s", b)
	}
}
