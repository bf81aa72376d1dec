package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPageRender checks that the page says when, where and how it was
// measured, without a server.
func TestPageRender(t *testing.T) {
	tb := newTable("1. Uncontended Lock+Unlock", "library", "ns/op")
	tb.add("redisync rlock", "1000")
	p := pageData{
		when:    time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC),
		commit:  "0123abcd",
		command: commandLine([]string{"-page", "../docs/benchmarks.md", "-note", "a busy machine"}),
		note:    "a busy machine",
		machine: machine{cpu: "Some CPU", cpus: 2, gomaxprocs: 2, goos: "linux", goarch: "amd64",
			goVersion: "go1.26", server: "redis-server 7.0.15", rtt: 20 * time.Microsecond},
		tables: []*table{tb},
	}
	var b bytes.Buffer
	p.render(&b)
	page := b.String()
	for _, want := range []string{
		"# Benchmarks",
		"2026-11-24 10:30 UTC",
		"`0123abcd`",
		"`cd bench && go run . -page ../docs/benchmarks.md -note 'a busy machine'`",
		"Some CPU, 2 CPUs (nproc 2, GOMAXPROCS 2), linux/amd64",
		"redis-server 7.0.15",
		"a busy machine",
		"### 1. Uncontended Lock+Unlock",
		"| redisync rlock |  1000 |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "Targets") {
		t.Error("the page shows the targets table")
	}
}

func TestCommandLine(t *testing.T) {
	if got, want := commandLine(nil), "cd bench && go run ."; got != want {
		t.Errorf("commandLine(nil) = %q, want %q", got, want)
	}
	if got, want := commandLine([]string{"-run", "handoff|workers", "-d", "2s"}), "cd bench && go run . -run 'handoff|workers' -d 2s"; got != want {
		t.Errorf("commandLine = %q, want %q", got, want)
	}
}
