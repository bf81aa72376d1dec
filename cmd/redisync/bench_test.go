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

// TestServerUsec checks that a command run inside scripts is not counted
// twice: the script's time includes it.
func TestServerUsec(t *testing.T) {
	before, _ := sumCalls("cmdstat_evalsha:calls=10,usec=100,usec_per_call=10.00\r\ncmdstat_set:calls=4,usec=8,usec_per_call=2.00\r\n")
	after, ok := sumCalls("cmdstat_evalsha:calls=12,usec=130,usec_per_call=10.83\r\n" +
		"cmdstat_hmget:calls=2,usec=6,usec_per_call=3.00\r\n" +
		"cmdstat_set:calls=8,usec=16,usec_per_call=2.00\r\n" +
		"cmdstat_info:calls=1,usec=50,usec_per_call=50.00\r\n")
	if !ok {
		t.Fatal("no commandstats found")
	}
	d := after.since(before)
	// Two scripts (30 µs, their HMGETs included) and four SETs, of which
	// the clients sent two: the others ran inside the scripts.
	sent := map[string]int64{"evalsha": 2, "set": 2}
	if got := d.serverUsec(sent); got != 34 {
		t.Fatalf("serverUsec = %v, want 34", got)
	}
	if d.all != 8 || d.scripts != 2 {
		t.Fatalf("since = %d commands, %d scripts; want 8, 2", d.all, d.scripts)
	}
}
