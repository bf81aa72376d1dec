package docscheck_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines is the README's budget: a front door, not a manual
// (issue 42). What does not fit goes to docs/.
const maxReadmeLines = 200

func TestReadmeLength(t *testing.T) {
	if n := strings.Count(read(t, "README.md"), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the rest to docs/", n, maxReadmeLines)
	}
}

// TestReadmeFiguresAreTheBenchmarkPage checks that every table of the
// README's Performance section is a cut of a table of docs/benchmarks.md,
// a page the bench module writes: the same header, and rows copied
// verbatim from the section that the last link into docs/benchmarks.md
// before the table names. Figures in the section's prose must appear on
// the page too. So regenerating the page fails this test until the
// README quotes the new run.
func TestReadmeFiguresAreTheBenchmarkPage(t *testing.T) {
	readme := section(read(t, "README.md"), "## Performance")
	if readme == "" {
		t.Fatal(`README.md has no "## Performance" section`)
	}
	page := read(t, "docs/benchmarks.md")
	pageSections := sectionsByAnchor(page)

	quoted := map[string]bool{}
	for _, tb := range tables(readme) {
		links := benchLink.FindAllStringSubmatch(tb.before, -1)
		if len(links) == 0 {
			t.Errorf("README table %q: no link into docs/benchmarks.md#... before it names where it comes from", tb.header)
			continue
		}
		anchor := links[len(links)-1][1]
		quoted[anchor] = true
		body, ok := pageSections[anchor]
		if !ok {
			t.Errorf("README table %q: docs/benchmarks.md has no heading #%s", tb.header, anchor)
			continue
		}
		pts := tables(body)
		if len(pts) != 1 {
			t.Errorf("docs/benchmarks.md#%s: %d tables, want 1", anchor, len(pts))
			continue
		}
		pt := pts[0]
		if tb.header != pt.header || tb.sep != pt.sep {
			t.Errorf("README table from #%s: header\n%s\n%s\nwant the page's\n%s\n%s", anchor, tb.header, tb.sep, pt.header, pt.sep)
		}
		rows := map[string]bool{}
		for _, r := range pt.rows {
			rows[r] = true
		}
		for _, r := range tb.rows {
			if !rows[r] {
				t.Errorf("README row not on docs/benchmarks.md#%s:\n%s", anchor, r)
			}
		}
	}
	// The front door shows where rlock loses as well as where it wins:
	// the summary, and pure contention, where rlock with a handle per
	// worker is slower than redsync and redislock.
	for _, prefix := range []string{"summary", "4-pure-contention"} {
		found := false
		for a := range quoted {
			found = found || strings.HasPrefix(a, prefix)
		}
		if !found {
			t.Errorf("README's Performance section quotes no table of docs/benchmarks.md#%s...", prefix)
		}
	}
	for _, fig := range figure.FindAllString(prose(readme), -1) {
		if !strings.Contains(page, fig) {
			t.Errorf("README's Performance section says %q, which docs/benchmarks.md does not", fig)
		}
	}
}

// TestReadmeExamplesRun checks that every Go block of the README is
// copied from a package's example_test.go, which go test runs and whose
// output it checks.
func TestReadmeExamplesRun(t *testing.T) {
	var examples []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.Name() == "example_test.go" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples = append(examples, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced(read(t, "README.md"), "go")
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go example")
	}
	for _, b := range blocks {
		found := false
		for _, e := range examples {
			found = found || strings.Contains(e, b)
		}
		if !found {
			t.Errorf("README Go block is not copied from any example_test.go:\n%s", b)
		}
	}
}

// TestReadmeTestCommandIsCIs checks that the README's first commands are
// the demo and the test command, and that .ci/run runs that very test
// command with a real server required.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	blocks := fenced(read(t, "README.md"), "")
	if len(blocks) == 0 {
		t.Fatal("README.md has no code block")
	}
	var cmds []string
	for line := range strings.Lines(blocks[0]) {
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	if len(cmds) != 2 || cmds[0] != "go run ./cmd/redisync demo" || !strings.HasPrefix(cmds[1], "go test ") {
		t.Fatalf("README's first block = %q, want the demo and the test command", cmds)
	}
	ci := read(t, ".ci/run")
	for line := range strings.Lines(ci) {
		line = strings.TrimSpace(line)
		env := assignments.FindString(line)
		if strings.TrimSpace(line[len(env):]) == cmds[1] && strings.Contains(env, "REDISYNC_REQUIRE_REDIS=1 ") {
			return
		}
	}
	t.Errorf(".ci/run does not run the README's test command %q with REDISYNC_REQUIRE_REDIS=1", cmds[1])
}

// TestTestDurationAgrees checks that what the README says the test
// command takes is what docs/testing.md says (.ci/run measures it).
func TestTestDurationAgrees(t *testing.T) {
	readme, testing := read(t, "README.md"), read(t, "docs/testing.md")
	durations := duration.FindAllString(readme, -1)
	if len(durations) == 0 {
		t.Fatal("README.md quotes no duration of the test command")
	}
	for _, d := range durations {
		if !strings.Contains(testing, d) {
			t.Errorf("README.md says %q; docs/testing.md does not", d)
		}
	}
}

var (
	benchLink = regexp.MustCompile(`\(docs/benchmarks\.md#([^)\s]+)\)`)
	// figure matches a measured value in prose: a number with a unit.
	figure = regexp.MustCompile(`\d+(?:\.\d+)?(?: ?(?:µs|ms|s)\b|x|%)`)
	// duration matches how long a test run takes: "8m50s", "about 9 minutes".
	duration = regexp.MustCompile(`\b\d+m\d+s\b|about \d+ minutes`)
	// assignments matches the environment assignments before a command.
	assignments = regexp.MustCompile(`^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*`)
)
