package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type table struct {
	before      string // the text since the previous table
	header, sep string
	rows        []string
}

// tables returns the Markdown tables of a text, outside code blocks.
func tables(text string) []table {
	var out []table
	var before strings.Builder
	var cur *table
	inCode := false
	for line := range strings.Lines(text) {
		l := strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "|") {
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			before.WriteString(line)
			continue
		}
		switch {
		case cur == nil:
			cur = &table{before: before.String(), header: l}
			before.Reset()
		case cur.sep == "":
			cur.sep = l
		default:
			cur.rows = append(cur.rows, l)
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// prose returns a text without its tables and code blocks.
func prose(text string) string {
	var b strings.Builder
	inCode := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if !inCode && !strings.HasPrefix(line, "|") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// fenced returns the contents of a text's fenced code blocks whose info
// string is lang ("" for every block).
func fenced(text, lang string) []string {
	var out []string
	var cur strings.Builder
	in, keep := false, false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			in = true
			keep = lang == "" || strings.TrimPrefix(trimmed, "```") == lang
			cur.Reset()
		case in && trimmed == "```":
			if keep {
				out = append(out, cur.String())
			}
			in = false
		case in:
			cur.WriteString(line)
		}
	}
	return out
}

// section returns the part of a Markdown text under heading, up to the
// next heading of the same level or above.
func section(text, heading string) string {
	level := strings.Count(strings.Fields(heading)[0], "#")
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		if h, ok := headingLevel(line); ok {
			if in && h <= level {
				break
			}
			if strings.TrimSpace(line) == heading {
				in = true
				continue
			}
		}
		if in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// sectionsByAnchor returns the text under each heading of a Markdown
// text (up to the next heading of any level), by GitHub's anchor.
func sectionsByAnchor(text string) map[string]string {
	out := map[string]string{}
	var anchor string
	var b strings.Builder
	inCode := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		if _, ok := headingLevel(line); ok && !inCode {
			if anchor != "" {
				out[anchor] = b.String()
			}
			anchor = slug(strings.TrimSpace(strings.TrimLeft(line, "#")))
			b.Reset()
			continue
		}
		b.WriteString(line)
	}
	if anchor != "" {
		out[anchor] = b.String()
	}
	return out
}

func headingLevel(line string) (int, bool) {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n > 6 || !strings.HasPrefix(line[n:], " ") {
		return 0, false
	}
	return n, true
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped,
// spaces as hyphens.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
