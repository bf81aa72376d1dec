package docscheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuaranteeMapNamesRealTests checks that every test docs/testing.md
// names in its map from the guarantees to their tests is declared in the
// file it names, so that a renamed or moved test shows up here.
//
// A cell of the map lists parts separated by ";", each one of
//
//	dir/file_test.go `TestA`, `TestB`
//	`TestA` in dir1/, dir2/ `file_test.go`
//
// where a path starting with faulttest/ is internal/faulttest/'s. A part
// that names a test in any other way is an error; a part that names none
// (a remark, "no test yet") is left alone.
func TestGuaranteeMapNamesRealTests(t *testing.T) {
	doc := section(read(t, "docs/testing.md"), "## Guarantees and the tests that hold them")
	if doc == "" {
		t.Fatal(`docs/testing.md has no "## Guarantees and the tests that hold them" section`)
	}
	checked := 0
	for _, tb := range tables(doc) {
		for _, row := range tb.rows {
			cells := strings.Split(strings.Trim(row, "|"), " | ")
			if len(cells) != 2 {
				t.Errorf("map row has %d cells, want 2: %s", len(cells), row)
				continue
			}
			for part := range strings.SplitSeq(cells[1], ";") {
				files, names := mapPart(strings.TrimSpace(part))
				if len(names) > 0 && len(files) == 0 {
					t.Errorf("map part names tests but no file: %q", part)
				}
				for _, f := range files {
					for _, n := range names {
						checked++
						if !declares(t, f, n) {
							t.Errorf("docs/testing.md: %s does not declare %s", f, n)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("docs/testing.md's map names no test")
	}
}

var (
	testName = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	fileLead = regexp.MustCompile(`^([\w./-]+_test\.go)\b`)
	inDirs   = regexp.MustCompile("^(?:`Test[A-Za-z0-9_]+`(?:, )?)+ in ((?:[\\w/.-]+/(?:, )?)+) `(\\w+_test\\.go)`")
)

// mapPart returns the files and the test names a part of the map names.
func mapPart(part string) (files, names []string) {
	for _, m := range testName.FindAllStringSubmatch(part, -1) {
		names = append(names, m[1])
	}
	if m := fileLead.FindStringSubmatch(part); m != nil {
		return []string{repoPath(m[1])}, names
	}
	if m := inDirs.FindStringSubmatch(part); m != nil {
		for dir := range strings.SplitSeq(m[1], ", ") {
			files = append(files, repoPath(dir+m[2]))
		}
	}
	return files, names
}

func repoPath(p string) string {
	if strings.HasPrefix(p, "faulttest/") {
		return "internal/" + p
	}
	return p
}

var declared = map[string]string{}

func declares(t *testing.T, file, name string) bool {
	t.Helper()
	text, ok := declared[file]
	if !ok {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Errorf("docs/testing.md names %s: %v", file, err)
		}
		text = string(b)
		declared[file] = text
	}
	return strings.Contains(text, "\nfunc "+name+"(")
}
