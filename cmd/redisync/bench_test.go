package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

var shortBench = []string{"bench", "--duration", "300ms", "--goroutines", "4", "--instances", "2", "--locks", "2"}

func TestBench(t *testing.T) {
	redistest.Long(t)
	forEachBackend(t, func(t *testing.T, b backend) {
		stdout, _ := mustRun(t, exitOK, append(shortBench, b.flags...)...)
		for _, p := range benchPrimitives() {
			row := tableRow(t, stdout, p.name)
			if ops, _ := strconv.Atoi(row[0]); ops == 0 {
				t.Errorf("%s: no operations:\n%s", p.name, stdout)
			}
			cmds := row[len(row)-2]
			if b.name == "miniredis" && cmds != "n/a" {
				t.Errorf("%s: commands per op %q on miniredis, want n/a", p.name, cmds)
			}
			if n, err := strconv.ParseFloat(cmds, 64); b.name != "miniredis" && (err != nil || n < 1) {
				t.Errorf("%s: commands per op %q, want a number of at least 1", p.name, cmds)
			}
		}
		assertNoRunKeys(t, b.rdb, "bench")
	})
}

func TestBenchEmbeddedProgress(t *testing.T) {
	redistest.Long(t)
	stdout, stderr := mustRun(t, exitOK, "bench", "--duration", "1500ms", "--goroutines", "2")
	if !strings.Contains(stdout, "embedded miniredis") || !strings.Contains(stdout, "p99 handoff") {
		t.Errorf("bench output lacks its header or table:\n%s", stdout)
	}
	// Not a terminal: plain progress lines, no carriage returns.
	if !regexp.MustCompile(`(?m)^rlock  1\.\d\ds/1\.50s  \d+ ops  \d+ ops/s$`).MatchString(stderr) || strings.Contains(stderr, "\r") {
		t.Errorf("progress is not one plain line a second:\n%q", stderr)
	}
}

func TestBenchDetectsViolation(t *testing.T) {
	withPrimitive(t, brokenPrimitive)
	_, stderr := mustRun(t, exitFailure, "bench", "--kinds", "broken", "--duration", "200ms", "--goroutines", "4", "--hold", "1ms")
	if !strings.Contains(stderr, "broken: two holders at once") {
		t.Errorf("bench did not report the broken lock:\n%s", stderr)
	}
}
