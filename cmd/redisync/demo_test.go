package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

// smallDemo sizes the demo for tests: the races still need overlapping
// buyers, which the think time provides.
var smallDemo = []string{"--stock", "20", "--buyers", "80", "--instances", "3", "--requests", "40", "--load", "20ms", "--transfers", "16"}

// checkDemo checks the demo's tables: the no-lock variants oversell and
// stampede, every distributed one sells exactly the stock and loads once.
func checkDemo(t *testing.T, stdout string) {
	t.Helper()
	if oversold := atoi(t, tableRow(t, stdout, "no lock")[1]); oversold == 0 {
		t.Errorf("no lock did not oversell:\n%s", stdout)
	}
	for _, v := range oversellVariants() {
		if !v.distributed {
			continue
		}
		row := tableRow(t, stdout, v.name)
		if row[0] != "20" || row[1] != "0" {
			t.Errorf("%s sold %s, oversold %s; want 20, 0", v.name, row[0], row[1])
		}
	}
	for _, v := range transferVariants() {
		if row := tableRow(t, stdout, v.name); v.checked && (row[0] != "16" || row[1] != "0") {
			t.Errorf("%s moved %s, stuck %s; want 16, 0", v.name, row[0], row[1])
		}
	}
	if strings.Contains(stdout, "== leader ==") && (!strings.Contains(stdout, "instance-1 took over") || !strings.Contains(stdout, "never on two instances at once: checked")) {
		t.Errorf("the leader scenario did not show a takeover:\n%s", stdout)
	}
	for _, v := range stampedeVariants() {
		row := tableRow(t, stdout, v.name)
		loads := atoi(t, row[1])
		if v.lock != nil && loads != 1 {
			t.Errorf("%s: %d database loads, want 1", v.name, loads)
		}
		if v.lock == nil && loads < 2 {
			t.Errorf("%s: %d database loads, want a stampede", v.name, loads)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("table cell %q is no number", s)
	}
	return n
}

func TestDemoEmbedded(t *testing.T) {
	stdout, _ := mustRun(t, exitOK, append([]string{"demo"}, smallDemo...)...)
	if !strings.Contains(stdout, "embedded miniredis") {
		t.Errorf("demo does not say where it runs:\n%s", stdout)
	}
	checkDemo(t, stdout)
	if oversold := atoi(t, tableRow(t, stdout, "local sync.Mutex")[1]); oversold == 0 {
		t.Errorf("a local mutex per instance did not oversell with 3 instances:\n%s", stdout)
	}
}

func TestDemo(t *testing.T) {
	redistest.Long(t)
	forEachBackend(t, func(t *testing.T, b backend) {
		args := append(b.args("demo"), smallDemo...)
		if b.name == "miniredis" {
			// Not embedded, it expires no key by itself: a dead leader
			// would lead forever (TestDemoEmbedded runs the scenario).
			args = append(args, "oversell", "stampede", "batch", "transfer")
		}
		stdout, _ := mustRun(t, exitOK, args...)
		checkDemo(t, stdout)
		assertNoRunKeys(t, b.rdb, "demo")
	})
}

func TestDemoOneScenario(t *testing.T) {
	stdout, _ := mustRun(t, exitOK, "demo", "stampede", "--requests", "10", "--load", "1ms")
	if strings.Contains(stdout, "oversell") || !strings.Contains(stdout, "== stampede ==") {
		t.Fatalf("demo stampede ran other scenarios or not this one:\n%s", stdout)
	}
}

func TestDemoFailsWhenALockDoesNotExclude(t *testing.T) {
	redistest.Long(t)
	withPrimitive(t, brokenPrimitive)
	mr, rdb := miniBackend(t)
	stdout, stderr := mustRun(t, exitFailure, append([]string{"demo", "--redis", "redis://" + mr}, smallDemo...)...)
	for _, want := range []string{"FAIL: broken sold", "FAIL: broken (double-checked) loaded"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "check failed: oversell") || !strings.Contains(stderr, "check failed: stampede") {
		t.Errorf("stderr does not report both failed checks:\n%s", stderr)
	}
	assertNoRunKeys(t, rdb, "demo")
}

// TestDemoBatch: no coordinator goes on before the batch is done, and the
// latch's coordinators go on soon after the last job, on every backend.
func TestDemoBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		stdout, _ := mustRun(t, exitOK, append(b.args("demo", "batch"), "--jobs", "24", "--instances", "3", "--work", "5ms")...)
		if strings.Contains(stdout, "== oversell ==") || !strings.Contains(stdout, "== batch ==") {
			t.Fatalf("demo batch ran other scenarios or not this one:\n%s", stdout)
		}
		for _, v := range batchVariants() {
			if early := tableRow(t, stdout, v.name)[0]; early != "0" {
				t.Errorf("%s: %s coordinator(s) went on early:\n%s", v.name, early, stdout)
			}
		}
		if !strings.Contains(stdout, "no coordinator went on before the last job was done: checked") {
			t.Errorf("the check is not reported:\n%s", stdout)
		}
		assertNoRunKeys(t, b.rdb, "demo")
	})
}

func TestDemoTransfer(t *testing.T) {
	stdout, _ := mustRun(t, exitOK, "demo", "transfer", "--transfers", "30", "--instances", "2")
	if strings.Contains(stdout, "oversell") || !strings.Contains(stdout, "== transfer ==") {
		t.Fatalf("demo transfer ran other scenarios or not this one:\n%s", stdout)
	}
	// 15 transfers of 2 from a to b, 15 of 1 back.
	if row := tableRow(t, stdout, "multilock.New (ordered by name)"); row[0] != "30" || row[1] != "0" || row[2] != "985/1015" {
		t.Errorf("multilock moved %s, stuck %s, balances %s; want 30, 0, 985/1015:\n%s", row[0], row[1], row[2], stdout)
	}
	// Crossed transfers that lock the payer first nearly always meet; a
	// run where none did is possible, so it is only logged.
	if row := tableRow(t, stdout, "rlock per account, in call order"); row[1] == "0" {
		t.Logf("no crossed transfers met this time:\n%s", stdout)
	}
}
